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

// The 2 % buckets: each estimate is at most 2 % above the true quantile, never below it.
void expect_within_bucket(double estimate, double truth) {
  EXPECT_GE(estimate, truth);
  EXPECT_LE(estimate, truth * 1.02 + 1e-12);
}

TEST(MetricsTest, SummaryExpositionAndQuantiles) {
  Registry r;
  const double q[] = {0.0, 0.5, 0.99, 1.0};
  auto* fam = r.summary("pulsar_broker_publish_latency", "-", {"cluster"}, q).value();
  auto s = fam->get("c1");
  for (int i = 1; i <= 1000; ++i) s->observe(i / 10.0);  // 0.1 ... 100
  s->observe(std::nan(""));                              // dropped
  EXPECT_EQ(s->count(), 1000u);
  EXPECT_DOUBLE_EQ(s->sum(), 50050.0);
  const auto e = s->estimate(Summary::Clock::now());
  ASSERT_EQ(e.size(), 4u);
  expect_within_bucket(e[0], 0.1);
  expect_within_bucket(e[1], 50.0);
  expect_within_bucket(e[2], 99.0);
  expect_within_bucket(e[3], 100.0);

  const std::string text = r.expose();
  EXPECT_NE(text.find("# TYPE pulsar_broker_publish_latency summary\n"), std::string::npos);
  for (const char* quantile : {"0", "0.5", "0.99", "1"}) {
    EXPECT_NE(text.find(std::string("pulsar_broker_publish_latency{cluster=\"c1\",quantile=\"") +
                        quantile + "\"} "),
              std::string::npos)
        << quantile << "\n"
        << text;
  }
  EXPECT_NE(text.find("pulsar_broker_publish_latency_sum{cluster=\"c1\"} 50050\n"),
            std::string::npos);
  EXPECT_NE(text.find("pulsar_broker_publish_latency_count{cluster=\"c1\"} 1000\n"),
            std::string::npos);
}

TEST(MetricsTest, SummaryValuesOutsideTheBucketsAndEmptyPeriods) {
  Registry r;
  const double q[] = {0.0, 1.0};
  auto s = r.summary("s_ms", "s", {}, q).value()->get();
  auto e = s->estimate(Summary::Clock::now());
  EXPECT_TRUE(std::isnan(e[0]) && std::isnan(e[1])) << "nothing observed: NaN";
  EXPECT_NE(r.expose().find("s_ms{quantile=\"0\"} NaN\n"), std::string::npos);
  s->observe(0.0);
  s->observe(-5.0);
  s->observe(1e12);
  s->observe(std::numeric_limits<double>::infinity());
  e = s->estimate(Summary::Clock::now());
  EXPECT_EQ(e[0], Summary::bounds().front());
  EXPECT_EQ(e[1], Summary::bounds().back());
  EXPECT_GE(Summary::bounds().back(), 1e7);
}

TEST(MetricsTest, SummaryQuantilesCoverTheLastWindowsOnly) {
  Registry r;
  const double q[] = {0.75};
  auto s = r.summary("w_ms", "w", {}, q, std::chrono::seconds(10)).value()->get();
  const auto t0 = Summary::Clock::now();
  for (int i = 0; i < 100; ++i) s->observe(1000.0);  // an old slow period
  expect_within_bucket(s->estimate(t0 + std::chrono::seconds(11))[0], 1000.0);  // rolls
  for (int i = 0; i < 100; ++i) s->observe(1.0);
  // Both periods are still counted (the slow one is at most two windows old): the 75th
  // percentile of 100 fast and 100 slow observations is a slow one.
  expect_within_bucket(s->estimate(t0 + std::chrono::seconds(12))[0], 1000.0);
  // A window later the snapshot taken at 11 s is the base: only the fast observations.
  expect_within_bucket(s->estimate(t0 + std::chrono::seconds(22))[0], 1.0);
  EXPECT_EQ(s->count(), 200u) << "_count and _sum are over all time";
  EXPECT_DOUBLE_EQ(s->sum(), 100100.0);
  // Every value lands in the first bucket whose bound is not below it.
  const auto& b = Summary::bounds();
  for (size_t i = 1; i < b.size(); i += 97) {
    auto one = r.summary("b_ms_" + std::to_string(i), "b", {}, q).value()->get();
    one->observe(b[i]);
    EXPECT_EQ(one->estimate(Summary::Clock::now())[0], b[i]) << i;
    auto above = r.summary("a_ms_" + std::to_string(i), "a", {}, q).value()->get();
    above->observe(std::nextafter(b[i - 1], b[i]));
    EXPECT_EQ(above->estimate(Summary::Clock::now())[0], b[i]) << i;
  }
}

TEST(MetricsTest, ValidatesSummaries) {
  Registry r;
  const double decreasing[] = {0.9, 0.5};
  const double outside[] = {0.5, 1.5};
  const double ok[] = {0.5};
  EXPECT_TRUE(r.summary("s1", "s", {}, decreasing).status().is(Errc::kInvalidArgument));
  EXPECT_TRUE(r.summary("s2", "s", {}, outside).status().is(Errc::kInvalidArgument));
  EXPECT_TRUE(r.summary("s3", "s", {"quantile"}, ok).status().is(Errc::kInvalidArgument));
  EXPECT_TRUE(
      r.summary("s4", "s", {}, ok, std::chrono::seconds(0)).status().is(Errc::kInvalidArgument));
  ASSERT_TRUE(r.summary("s5", "s", {}, ok).ok());
  EXPECT_TRUE(r.counter("s5_count", "c").status().is(Errc::kAlreadyExists));
  EXPECT_TRUE(r.gauge("s5_sum", "c").status().is(Errc::kAlreadyExists));
  const double other[] = {0.9};
  EXPECT_TRUE(r.summary("s5", "s", {}, other).status().is(Errc::kAlreadyExists));
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
  const double q[] = {0.5};
  auto summary = r.summary("sum_ms", "s", {}, q).value()->get();
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
        summary->observe(2.0);
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
  EXPECT_EQ(summary->count(), static_cast<uint64_t>(kTotal));
  EXPECT_EQ(summary->sum(), 2 * kTotal);
  expect_within_bucket(summary->estimate(Summary::Clock::now())[0], 2.0);
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
