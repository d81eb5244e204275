#pragma once
// Process metrics in the Prometheus text exposition format, version 0.0.4.
//
// A Registry owns named families; a family has help text, a type and a fixed list of label
// names, and holds one child per tuple of label values. Registration and child look-up take
// locks; updating a child does not: a hot path looks its child up once, keeps the
// shared_ptr, and then increments relaxed atomics.
//
//   auto* fam = registry.counter("magnetar_in_messages_total", "Messages in", {"topic"}).value();
//   std::shared_ptr<Counter> in = fam->get("persistent://t/ns/a");  // once, at topic load
//   in->inc();                                                        // per message
//
// Lifetime rule (shared ownership):
// - Children are owned jointly by their family and by every holder of the shared_ptr.
//   remove(values...) only unlinks the child: it disappears from the next scrape, while
//   holders may go on updating it safely, their updates simply no longer exported. A later
//   get() with the same values creates a fresh child starting from zero.
// - Families are never removed; a family pointer is valid for the lifetime of its Registry.
//   default_registry() is never destroyed, so its families outlive every thread.
// - Callback gauges are the exception, as they call into their owner: once remove() has
//   returned the callback is not running and will never run again, so the owner may destroy
//   whatever it captured.
//
// Thread-safety: every method of Registry and of the families may be called from any thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/status.h"

namespace magnetar::metrics {

// `[a-zA-Z_:][a-zA-Z0-9_:]*`.
bool valid_metric_name(std::string_view name) noexcept;
// `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with the reserved `__`.
bool valid_label_name(std::string_view name) noexcept;

// Upper bounds in milliseconds, those Pulsar brokers use for their latency histograms.
std::span<const double> default_latency_buckets_ms() noexcept;
// Upper bounds in milliseconds resolving the sub-millisecond range: for the steps of a
// bookie add (journal, fdatasync), whose whole budget is about a millisecond.
std::span<const double> fine_latency_buckets_ms() noexcept;

// A monotonic total. Integral increments are exact (a 64-bit count); fractional ones are
// summed separately as a double. Negative and NaN increments are dropped: a counter never
// goes down.
class Counter {
 public:
  void inc() noexcept { whole_.fetch_add(1, std::memory_order_relaxed); }
  void inc(double v) noexcept;
  template <std::integral I>
  void inc(I n) noexcept {
    if constexpr (std::is_signed_v<I>) {
      if (n < 0) return;
    }
    whole_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  }

  double value() const noexcept;
  // Appends the sample value as the exposition writes it.
  void append_value(std::string& out) const;

 private:
  std::atomic<uint64_t> whole_{0};
  std::atomic<double> fraction_{0.0};
};

// A value that goes up and down.
class Gauge {
 public:
  void set(double v) noexcept { value_.store(v, std::memory_order_relaxed); }
  void inc(double v = 1.0) noexcept;
  void dec(double v = 1.0) noexcept { inc(-v); }
  double value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Observations counted into fixed buckets. Bucket i counts observations v <= bounds[i]; a
// final implicit +Inf bucket takes the rest. observe() is lock-free (one bucket increment
// and a compare-and-swap on the sum). NaN observations are dropped.
class Histogram {
 public:
  // `bounds` is strictly increasing and finite (the family checks this).
  explicit Histogram(std::shared_ptr<const std::vector<double>> bounds);

  void observe(double v) noexcept;

  const std::vector<double>& bounds() const noexcept { return *bounds_; }
  // Per-bucket (not cumulative) counts, bounds().size() + 1 of them, the last for +Inf.
  std::vector<uint64_t> bucket_counts() const;
  uint64_t count() const noexcept;
  double sum() const noexcept { return sum_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<const std::vector<double>> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0.0};
};

// Observations whose quantiles are estimated over a sliding window: a Prometheus summary
// (`{quantile="0.5"}` samples, then `_sum` and `_count` over all time). observe() is
// lock-free: it counts the value into one of logarithmic buckets 2 % wide (values from
// 0.001 to 10^7; smaller ones count as 0.001, larger ones as 10^7) and adds it to the sum.
// Quantiles are read at scrape time from the counts since a snapshot taken by an earlier
// scrape at least a window ago (between one and two windows ago when scrapes come at least
// once a window), so each is an upper bound at most 2 % above the true value of that
// period; NaN when nothing was observed in it. Quantile 0 is the
// smallest value of the period and 1 the largest (within the same 2 %).
class Summary {
 public:
  using Clock = std::chrono::steady_clock;
  // `quantiles` in [0, 1], strictly increasing (the registry checks this).
  Summary(std::shared_ptr<const std::vector<double>> quantiles, Clock::duration window);

  void observe(double v) noexcept;

  const std::vector<double>& quantiles() const noexcept { return *quantiles_; }
  // One estimate per quantile over the current period; rolls the period when `now` is a
  // window past the newer snapshot.
  std::vector<double> estimate(Clock::time_point now) const;
  uint64_t count() const noexcept;  // the buckets' total, as Histogram's
  double sum() const noexcept { return sum_.load(std::memory_order_relaxed); }

  // The bucket upper bounds shared by every summary.
  static const std::vector<double>& bounds() noexcept;

 private:
  struct Snapshot {
    Clock::time_point at;
    std::vector<uint64_t> counts;
  };
  std::vector<uint64_t> read_counts() const;

  std::shared_ptr<const std::vector<double>> quantiles_;
  const Clock::duration window_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0.0};
  mutable std::mutex mu_;  // the snapshots; scrapes only
  mutable Snapshot older_, newer_;
};

namespace detail {
// The exposition lines of one child; `labels` is preformatted, escaped, possibly empty.
void append_samples(std::string& out, const std::string& name, const std::string& labels,
                    const Counter& c);
void append_samples(std::string& out, const std::string& name, const std::string& labels,
                    const Gauge& g);
void append_samples(std::string& out, const std::string& name, const std::string& labels,
                    const Histogram& h);
void append_samples(std::string& out, const std::string& name, const std::string& labels,
                    const Summary& s);
}  // namespace detail

// A callback gauge is a gauge to Prometheus but a different kind of family to us.
enum class Type { kCounter, kGauge, kCallbackGauge, kHistogram, kSummary };
// The word on the `# TYPE` line: "counter", "gauge", "histogram" or "summary".
std::string_view to_string(Type t) noexcept;

// What every family shares: identity, label names, a lock over its children, and the
// exposition of its samples.
class FamilyBase {
 public:
  // Label values in the order of label_names(). The arity is fixed by each call site, so a
  // mismatch is a programming error and asserts.
  using Values = std::vector<std::string>;

  // `bounds`: a histogram's bucket bounds or a summary's quantiles; null for other types.
  FamilyBase(std::string name, std::string help, Type type, std::vector<std::string> label_names,
             std::shared_ptr<const std::vector<double>> bounds = nullptr);
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const noexcept { return name_; }
  const std::string& help() const noexcept { return help_; }
  Type type() const noexcept { return type_; }
  const std::vector<std::string>& label_names() const noexcept { return label_names_; }
  // Histogram bucket upper bounds without +Inf, or a summary's quantiles; null for other
  // types.
  const std::vector<double>* bounds() const noexcept { return bounds_.get(); }

  // Appends HELP, TYPE and the samples of every child; nothing when there are no children.
  void expose(std::string& out) const;
  size_t size() const;

 protected:
  template <typename... Ls>
  static Values to_values(const Ls&... values) {
    return Values{std::string(std::string_view(values))...};
  }
  void check_arity(const Values& values) const;
  // `a="x",b="y"`, escaped; empty without labels.
  std::string format_labels(const Values& values) const;

  friend class Registry;
  // A family without labels has exactly one child: the registry creates it up front so that
  // it is exposed (as zero) before its first update. No-op for labelled families.
  virtual void add_unlabeled_child() {}

  virtual size_t size_locked() const = 0;
  // Appends one line (or, for histograms, several) per child; called with mu_ held.
  virtual void expose_children_locked(std::string& out) const = 0;

  // Guards the child maps of derived families. Never held while updating a child.
  mutable std::mutex mu_;

 private:
  const std::string name_;
  const std::string help_;
  const Type type_;
  const std::vector<std::string> label_names_;
  const std::shared_ptr<const std::vector<double>> bounds_;
};

// A family of Counters, Gauges, Histograms or Summaries.
template <typename T>
class Family final : public FamilyBase {
 public:
  using Factory = std::function<std::shared_ptr<T>()>;
  Family(std::string name, std::string help, Type type, std::vector<std::string> label_names,
         std::shared_ptr<const std::vector<double>> bounds, Factory factory)
      : FamilyBase(std::move(name), std::move(help), type, std::move(label_names),
                   std::move(bounds)),
        factory_(std::move(factory)) {}

  // The child for these label values, created on first use. Takes the family lock: call it
  // when the labelled object appears (topic load, connection open) and keep the pointer.
  template <typename... Ls>
    requires(std::is_convertible_v<const Ls&, std::string_view> && ...)
  std::shared_ptr<T> get(const Ls&... values) {
    return get_values(to_values(values...));
  }
  // Unlinks the child; see the lifetime rule at the top. False when there was none.
  template <typename... Ls>
    requires(std::is_convertible_v<const Ls&, std::string_view> && ...)
  bool remove(const Ls&... values) {
    return remove_values(to_values(values...));
  }

  std::shared_ptr<T> get_values(Values values) {
    check_arity(values);
    std::lock_guard lock(mu_);
    auto it = children_.find(values);
    if (it == children_.end()) {
      std::string labels = format_labels(values);
      it = children_.emplace(std::move(values), Child{std::move(labels), factory_()}).first;
    }
    return it->second.metric;
  }
  bool remove_values(const Values& values) {
    check_arity(values);
    std::lock_guard lock(mu_);
    return children_.erase(values) > 0;
  }

 private:
  struct Child {
    std::string labels;  // preformatted and escaped
    std::shared_ptr<T> metric;
  };

  void add_unlabeled_child() override {
    if (label_names().empty()) get_values({});
  }
  size_t size_locked() const override { return children_.size(); }
  void expose_children_locked(std::string& out) const override {
    for (const auto& [values, child] : children_) {
      detail::append_samples(out, name(), child.labels, *child.metric);
    }
  }

  const Factory factory_;
  std::map<Values, Child> children_;  // ordered by label values: a stable exposition order
};

// Gauges whose value a callback computes at scrape time (backlog size, cache occupancy).
// Callbacks run on the scraping thread with this family's lock held: they must be
// thread-safe, quick, and must not call back into this family.
class CallbackGaugeFamily final : public FamilyBase {
 public:
  using Callback = std::function<double()>;
  CallbackGaugeFamily(std::string name, std::string help, std::vector<std::string> label_names)
      : FamilyBase(std::move(name), std::move(help), Type::kCallbackGauge,
                   std::move(label_names)) {}

  // Installs (or replaces) the callback for these label values.
  template <typename... Ls>
    requires(std::is_convertible_v<const Ls&, std::string_view> && ...)
  void set(Callback callback, const Ls&... values) {
    set_values(std::move(callback), to_values(values...));
  }
  // Once this returns the callback is not running and will never be called again.
  template <typename... Ls>
    requires(std::is_convertible_v<const Ls&, std::string_view> && ...)
  bool remove(const Ls&... values) {
    return remove_values(to_values(values...));
  }

  void set_values(Callback callback, Values values);
  bool remove_values(const Values& values);

 private:
  struct Child {
    std::string labels;
    Callback callback;
  };

  size_t size_locked() const override { return children_.size(); }
  void expose_children_locked(std::string& out) const override;

  std::map<Values, Child> children_;
};

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Registers a family, or returns the existing one when name, type, help, label names (and
  // buckets) are all identical. Errors: kInvalidArgument for a bad metric or label name, or
  // bad buckets or quantiles; kAlreadyExists when the name, or a sample name it would emit
  // (histogram `_bucket`, `_sum`, `_count`; summary `_sum`, `_count`), is taken by a
  // different family.
  // The returned pointer is valid as long as this Registry.
  Result<Family<Counter>*> counter(std::string_view name, std::string_view help,
                                   std::vector<std::string> label_names = {});
  Result<Family<Gauge>*> gauge(std::string_view name, std::string_view help,
                               std::vector<std::string> label_names = {});
  Result<CallbackGaugeFamily*> callback_gauge(std::string_view name, std::string_view help,
                                              std::vector<std::string> label_names = {});
  // `bounds`: strictly increasing finite upper bounds; a trailing +Inf may be given or not.
  Result<Family<Histogram>*> histogram(
      std::string_view name, std::string_view help, std::vector<std::string> label_names = {},
      std::span<const double> bounds = default_latency_buckets_ms());
  // `quantiles`: strictly increasing, each in [0, 1]. `window`: see Summary.
  Result<Family<Summary>*> summary(std::string_view name, std::string_view help,
                                   std::vector<std::string> label_names,
                                   std::span<const double> quantiles,
                                   Summary::Clock::duration window = std::chrono::seconds(60));

  // The whole registry in text format 0.0.4 (Content-Type: text/plain; version=0.0.4),
  // families sorted by name, children by label values.
  std::string expose() const;

 private:
  // Validates and inserts `family`, or returns the identical existing one.
  Result<FamilyBase*> add(std::unique_ptr<FamilyBase> family);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<FamilyBase>, std::less<>> families_;
  // Every sample name emitted by a family -> that family's name (collision checks).
  std::map<std::string, std::string, std::less<>> sample_names_;
};

// The process-wide registry served at /metrics. Never destroyed.
Registry& default_registry();

}  // namespace magnetar::metrics
