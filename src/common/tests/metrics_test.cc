#include "common/metrics.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

namespace magnetar::metrics {
namespace {

TEST(MetricsTest, CounterWithLabelsExposition) {
  Registry r;
  auto* fam =
      r.counter("magnetar_in_messages_total", "Messages received", {"topic", "cluster"}).value();
  auto b = fam->get("persistent://p/ns/b", "c1");
  auto a = fam->get("persistent://p/ns/a", "c1");
  b->inc();
  b->inc(2);
  a->inc(0.5);
  EXPECT_EQ(r.expose(),
            "# HELP magnetar_in_messages_total Messages received\n"
            "# TYPE magnetar_in_messages_total counter\n"
            "magnetar_in_messages_total{topic=\"persistent://p/ns/a\",cluster=\"c1\"} 0.5\n"
            "magnetar_in_messages_total{topic=\"persistent://p/ns/b\",cluster=\"c1\"} 3\n");
}

TEST(MetricsTest, CounterIsExactAndNeverGoesDown) {
  Registry r;
  auto c = r.counter("big_total", "h").value()->get();
  c->inc(uint64_t{1} << 60);
  c->inc(-5);
  c->inc(-1.0);
  c->inc(std::nan(""));
  EXPECT_EQ(r.expose(),
            "# HELP big_total h\n# TYPE big_total counter\nbig_total 1152921504606846976\n");
}

TEST(MetricsTest, UnlabeledGaugeExposedAtZeroThenUpdated) {
  Registry r;
  auto* fam = r.gauge("magnetar_connections", "Open connections").value();
  EXPECT_EQ(r.expose(),
            "# HELP magnetar_connections Open connections\n"
            "# TYPE magnetar_connections gauge\n"
            "magnetar_connections 0\n");
  auto g = fam->get();
  g->set(5);
  g->dec();
  g->inc(0.25);
  EXPECT_EQ(g->value(), 4.25);
  EXPECT_EQ(r.expose(),
            "# HELP magnetar_connections Open connections\n"
            "# TYPE magnetar_connections gauge\n"
            "magnetar_connections 4.25\n");
  g->set(-std::numeric_limits<double>::infinity());
  EXPECT_NE(r.expose().find("magnetar_connections -Inf\n"), std::string::npos);
}

TEST(MetricsTest, CallbackGaugeEvaluatedAtScrape) {
  Registry r;
  auto* fam = r.callback_gauge("magnetar_backlog", "Backlog in messages", {"topic"}).value();
  int backlog = 7;
  fam->set([&] { return static_cast<double>(backlog); }, "t1");
  backlog = 42;
  EXPECT_EQ(r.expose(),
            "# HELP magnetar_backlog Backlog in messages\n"
            "# TYPE magnetar_backlog gauge\n"
            "magnetar_backlog{topic=\"t1\"} 42\n");
}

TEST(MetricsTest, HistogramWithLabelsExposition) {
  Registry r;
  const double bounds[] = {1, 5, 10};
  auto* fam = r.histogram("magnetar_add_latency_ms", "Add latency", {"topic"}, bounds).value();
  auto h = fam->get("t");
  for (double v : {0.5, 1.0, 3.0, 7.0, 100.0}) h->observe(v);
  h->observe(std::nan(""));  // dropped
  EXPECT_EQ(h->count(), 5u);
  EXPECT_EQ(r.expose(),
            "# HELP magnetar_add_latency_ms Add latency\n"
            "# TYPE magnetar_add_latency_ms histogram\n"
            "magnetar_add_latency_ms_bucket{topic=\"t\",le=\"1\"} 2\n"
            "magnetar_add_latency_ms_bucket{topic=\"t\",le=\"5\"} 3\n"
            "magnetar_add_latency_ms_bucket{topic=\"t\",le=\"10\"} 4\n"
            "magnetar_add_latency_ms_bucket{topic=\"t\",le=\"+Inf\"} 5\n"
            "magnetar_add_latency_ms_sum{topic=\"t\"} 111.5\n"
            "magnetar_add_latency_ms_count{topic=\"t\"} 5\n");
}

TEST(MetricsTest, HistogramDefaultLatencyBuckets) {
  Registry r;
  auto h = r.histogram("lat_ms", "l").value()->get();
  h->observe(0.2);
  h->observe(1500);
  EXPECT_EQ(r.expose(),
            "# HELP lat_ms l\n"
            "# TYPE lat_ms histogram\n"
            "lat_ms_bucket{le=\"0.5\"} 1\n"
            "lat_ms_bucket{le=\"1\"} 1\n"
            "lat_ms_bucket{le=\"5\"} 1\n"
            "lat_ms_bucket{le=\"10\"} 1\n"
            "lat_ms_bucket{le=\"20\"} 1\n"
            "lat_ms_bucket{le=\"50\"} 1\n"
            "lat_ms_bucket{le=\"100\"} 1\n"
            "lat_ms_bucket{le=\"200\"} 1\n"
            "lat_ms_bucket{le=\"1000\"} 1\n"
            "lat_ms_bucket{le=\"+Inf\"} 2\n"
            "lat_ms_sum 1500.2\n"
            "lat_ms_count 2\n");
}

TEST(MetricsTest, FamiliesSortedByNameChildrenByLabels) {
  Registry r;
  auto* z = r.counter("z_total", "z", {"k"}).value();
  auto* a = r.gauge("a_value", "a", {"k"}).value();
  z->get("b")->inc();
  z->get("a")->inc();
  a->get("y")->set(1);
  a->get("x")->set(2);
  EXPECT_EQ(r.expose(),
            "# HELP a_value a\n# TYPE a_value gauge\n"
            "a_value{k=\"x\"} 2\na_value{k=\"y\"} 1\n"
            "# HELP z_total z\n# TYPE z_total counter\n"
            "z_total{k=\"a\"} 1\nz_total{k=\"b\"} 1\n");
}

TEST(MetricsTest, EscapesLabelValuesAndHelp) {
  Registry r;
  auto* fam = r.counter("esc_total", "first line\nback\\slash \"quoted\"", {"v"}).value();
  fam->get("a\\b\"c\nd")->inc();
  EXPECT_EQ(r.expose(),
            "# HELP esc_total first line\\nback\\\\slash \"quoted\"\n"
            "# TYPE esc_total counter\n"
            "esc_total{v=\"a\\\\b\\\"c\\nd\"} 1\n");
}

TEST(MetricsTest, ValidatesNames) {
  for (const char* bad : {"", "1abc", "a-b", "a b", "m\xc3\xa9trique", "a{b}"}) {
    EXPECT_FALSE(valid_metric_name(bad)) << bad;
  }
  for (const char* good : {"a", "_x", "ns:sub:metric", "abc_123", "A"}) {
    EXPECT_TRUE(valid_metric_name(good)) << good;
  }
  EXPECT_FALSE(valid_label_name("a:b"));
  EXPECT_FALSE(valid_label_name("__reserved"));
  EXPECT_FALSE(valid_label_name("9"));
  EXPECT_TRUE(valid_label_name("_topic"));

  Registry r;
  EXPECT_TRUE(r.counter("bad-name", "h").status().is(Errc::kInvalidArgument));
  EXPECT_TRUE(r.gauge("g", "h", {"a:b"}).status().is(Errc::kInvalidArgument));
  EXPECT_TRUE(r.gauge("g", "h", {"x", "x"}).status().is(Errc::kInvalidArgument));
  EXPECT_TRUE(r.histogram("h", "h", {"le"}).status().is(Errc::kInvalidArgument));
  EXPECT_EQ(r.expose(), "");  // nothing half-registered
}

TEST(MetricsTest, ValidatesHistogramBuckets) {
  Registry r;
  const double decreasing[] = {5, 1};
  const double nan[] = {1, std::nan("")};
  const double dup[] = {1, 1};
  const double with_inf[] = {1, 2, std::numeric_limits<double>::infinity()};
  EXPECT_TRUE(r.histogram("h1", "h", {}, decreasing).status().is(Errc::kInvalidArgument));
  EXPECT_TRUE(r.histogram("h2", "h", {}, nan).status().is(Errc::kInvalidArgument));
  EXPECT_TRUE(r.histogram("h3", "h", {}, dup).status().is(Errc::kInvalidArgument));
  auto* fam = r.histogram("h4", "h", {}, with_inf).value();
  EXPECT_EQ(*fam->bounds(), (std::vector<double>{1, 2}));
  EXPECT_EQ(fam->get()->bucket_counts().size(), 3u);
}

TEST(MetricsTest, ReRegisteringIdenticallyReturnsSameFamily) {
  Registry r;
  auto* first = r.counter("req_total", "Requests", {"op"}).value();
  auto* again = r.counter("req_total", "Requests", {"op"}).value();
  EXPECT_EQ(first, again);
  EXPECT_EQ(first->get("x"), again->get("x"));
}

TEST(MetricsTest, ConflictingRegistrationsRejected) {
  Registry r;
  ASSERT_TRUE(r.counter("x_total", "X", {"a"}).ok());
  EXPECT_TRUE(r.gauge("x_total", "X", {"a"}).status().is(Errc::kAlreadyExists));
  EXPECT_TRUE(r.callback_gauge("x_total", "X", {"a"}).status().is(Errc::kAlreadyExists));
  EXPECT_TRUE(r.counter("x_total", "X", {"b"}).status().is(Errc::kAlreadyExists));
  EXPECT_TRUE(r.counter("x_total", "X", {"a", "b"}).status().is(Errc::kAlreadyExists));
  EXPECT_TRUE(r.counter("x_total", "Other help", {"a"}).status().is(Errc::kAlreadyExists));

  ASSERT_TRUE(r.gauge("g", "G").ok());
  EXPECT_TRUE(r.callback_gauge("g", "G").status().is(Errc::kAlreadyExists));

  // Histograms own their _bucket, _sum and _count sample names, in both directions.
  ASSERT_TRUE(r.histogram("lat", "L").ok());
  EXPECT_TRUE(r.counter("lat_count", "C").status().is(Errc::kAlreadyExists));
  EXPECT_TRUE(r.gauge("lat_sum", "S").status().is(Errc::kAlreadyExists));
  ASSERT_TRUE(r.counter("other_sum", "S").ok());
  EXPECT_TRUE(r.histogram("other", "O").status().is(Errc::kAlreadyExists));
  const double bounds[] = {1, 2};
  EXPECT_TRUE(r.histogram("lat", "L", {}, bounds).status().is(Errc::kAlreadyExists));
}

TEST(MetricsTest, RemovedChildStaysUsableButIsNotExposed) {
  Registry r;
  auto* fam = r.counter("msgs_total", "M", {"topic"}).value();
  auto keep = fam->get("a");
  std::shared_ptr<Counter> held = fam->get("b");
  held->inc(3);
  keep->inc();

  EXPECT_TRUE(fam->remove("b"));
  EXPECT_FALSE(fam->remove("b"));
  EXPECT_EQ(fam->size(), 1u);
  held->inc();  // the hot path may still hold it: safe, just no longer exported
  EXPECT_EQ(held->value(), 4);
  EXPECT_EQ(r.expose(),
            "# HELP msgs_total M\n# TYPE msgs_total counter\nmsgs_total{topic=\"a\"} 1\n");

  // The same labels later get a fresh child.
  auto fresh = fam->get("b");
  EXPECT_NE(fresh, held);
  EXPECT_EQ(fresh->value(), 0);

  // A family whose children are all gone writes nothing, not even HELP/TYPE.
  EXPECT_TRUE(fam->remove("a"));
  EXPECT_TRUE(fam->remove("b"));
  EXPECT_EQ(r.expose(), "");
}

TEST(MetricsTest, RemovedCallbackIsNeverCalledAgain) {
  Registry r;
  auto* fam = r.callback_gauge("backlog", "B", {"topic"}).value();
  int calls = 0;
  fam->set([&] { return static_cast<double>(++calls); }, "t");
  EXPECT_NE(r.expose().find("backlog{topic=\"t\"} 1\n"), std::string::npos);
  EXPECT_TRUE(fam->remove("t"));
  EXPECT_EQ(r.expose(), "");
  EXPECT_EQ(calls, 1);
}

// The owner destroys what its callback captured right after remove(); a concurrent scrape
// must never see it (ASan would flag a use after free).
TEST(MetricsTest, CallbackRemovalIsSafeAgainstConcurrentScrape) {
  Registry r;
  auto* fam = r.callback_gauge("topic_backlog", "B", {"topic"}).value();
  std::atomic<bool> stop{false};
  std::atomic<int> scrapes{0};
  std::thread scraper([&] {
    while (!stop.load()) {
      (void)r.expose();
      scrapes.fetch_add(1);
    }
  });
  for (int i = 0; i < 2000 || scrapes.load() < 500; ++i) {
    auto backlog = std::make_unique<int64_t>(i);
    fam->set([p = backlog.get()] { return static_cast<double>(*p); }, "t");
    EXPECT_TRUE(fam->remove("t"));
    backlog.reset();
  }
  stop = true;
  scraper.join();
}

TEST(MetricsTest, ConcurrentUpdatesSumExactly) {
  Registry r;
  auto whole = r.counter("whole_total", "w").value()->get();
  auto halves = r.counter("halves_total", "h").value()->get();
  auto gauge = r.gauge("level", "l").value()->get();
  auto hist = r.histogram("lat_ms", "l", {"k"}).value()->get("v");
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100000;

  std::atomic<bool> stop{false};
  std::thread scraper([&] {
    while (!stop.load()) (void)r.expose();
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        whole->inc();
        halves->inc(0.5);
        gauge->inc();
        gauge->dec(0.5);
        hist->observe(2.0);
      }
    });
  }
  for (auto& t : threads) t.join();
  stop = true;
  scraper.join();

  constexpr double kTotal = double{kThreads} * kPerThread;
  EXPECT_EQ(whole->value(), kTotal);
  EXPECT_EQ(halves->value(), kTotal / 2);
  EXPECT_EQ(gauge->value(), kTotal / 2);
  EXPECT_EQ(hist->count(), static_cast<uint64_t>(kTotal));
  EXPECT_EQ(hist->sum(), 2 * kTotal);
  EXPECT_EQ(hist->bucket_counts()[2], static_cast<uint64_t>(kTotal));  // le="5"
  EXPECT_NE(r.expose().find("whole_total 400000\n"), std::string::npos);
}

TEST(MetricsTest, DefaultRegistryIsProcessWide) {
  EXPECT_EQ(&default_registry(), &default_registry());
  auto c = default_registry().counter("metrics_test_default_total", "t").value()->get();
  c->inc();  // cumulative across --gtest_repeat: compare with the value, not a constant
  std::string line = "metrics_test_default_total ";
  c->append_value(line);
  EXPECT_NE(default_registry().expose().find(line + "\n"), std::string::npos);
}

TEST(MetricsDeathTest, WrongNumberOfLabelValuesAsserts) {
  Registry r;
  auto* fam = r.counter("arity_total", "a", {"topic"}).value();
  EXPECT_DEATH(fam->get("a", "b"), "takes 1 label values, got 2");
}

}  // namespace
}  // namespace magnetar::metrics
