#include "common/metrics.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

namespace magnetar::metrics {
namespace {

// C++20 has no fetch_add for atomic<double> that both our compilers ship, so: a CAS loop.
void add_relaxed(std::atomic<double>& a, double delta) noexcept {
  double current = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(current, current + delta, std::memory_order_relaxed,
                                  std::memory_order_relaxed)) {
  }
}

// Shortest text that reads back as the same double ("0.5", "1000", "1e+06"), or the
// format's spellings of the special values.
void append_double(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    std::array<char, 32> buf;
    auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    out.append(buf.data(), res.ptr);
  }
}

void append_uint(std::string& out, uint64_t v) {
  std::array<char, 24> buf;
  auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  out.append(buf.data(), res.ptr);
}

// HELP text escapes backslash and newline; label values also escape the double quote.
void append_escaped(std::string& out, std::string_view text, bool quote) {
  for (char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '"':
        out += quote ? "\\\"" : "\"";
        break;
      default:
        out += c;
    }
  }
}

// `name{labels}` or `name{labels,extra}`; no braces when both are empty.
void append_series(std::string& out, std::string_view name, std::string_view suffix,
                   std::string_view labels, std::string_view extra = {}) {
  out += name;
  out += suffix;
  if (labels.empty() && extra.empty()) {
    out += ' ';
    return;
  }
  out += '{';
  out += labels;
  if (!labels.empty() && !extra.empty()) out += ',';
  out += extra;
  out += "} ";
}

bool name_char(char c, bool first, bool colon_ok) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (c == ':') return colon_ok;
  return !first && c >= '0' && c <= '9';
}

bool valid_name(std::string_view name, bool colon_ok) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!name_char(name[i], i == 0, colon_ok)) return false;
  }
  return true;
}

// The sample names a family writes, all of which must be unique across the registry.
std::vector<std::string> sample_names_of(const FamilyBase& f) {
  if (f.type() == Type::kHistogram) {
    return {f.name(), f.name() + "_bucket", f.name() + "_sum", f.name() + "_count"};
  }
  if (f.type() == Type::kSummary) return {f.name(), f.name() + "_sum", f.name() + "_count"};
  return {f.name()};
}

std::string join(const std::vector<std::string>& parts) {
  std::string out = "[";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += ", ";
    out += parts[i];
  }
  return out + "]";
}

// A histogram writes its `le` label and a summary its `quantile` label itself: neither takes
// one of that name from its caller.
Status check_reserved_label(std::string_view kind, std::string_view name,
                            const std::vector<std::string>& label_names,
                            std::string_view reserved) {
  for (const std::string& label : label_names) {
    if (label == reserved) {
      return Status(Errc::kInvalidArgument, std::string(kind) + " " + std::string(name) +
                                                ": label name `" + std::string(reserved) +
                                                "` is reserved");
    }
  }
  return Status::OK();
}

constexpr std::array<double, 9> kLatencyBucketsMs = {0.5, 1, 5, 10, 20, 50, 100, 200, 1000};
constexpr std::array<double, 14> kFineLatencyBucketsMs = {0.05, 0.1, 0.25, 0.5, 0.75, 1,   2,
                                                          3,    5,   10,   20,  50,   200, 1000};

}  // namespace

bool valid_metric_name(std::string_view name) noexcept {
  return valid_name(name, true);
}

bool valid_label_name(std::string_view name) noexcept {
  return valid_name(name, false) && !name.starts_with("__");
}

std::span<const double> default_latency_buckets_ms() noexcept {
  return kLatencyBucketsMs;
}

std::span<const double> fine_latency_buckets_ms() noexcept {
  return kFineLatencyBucketsMs;
}

std::string_view to_string(Type t) noexcept {
  switch (t) {
    case Type::kCounter:
      return "counter";
    case Type::kGauge:
    case Type::kCallbackGauge:
      return "gauge";
    case Type::kHistogram:
      return "histogram";
    case Type::kSummary:
      return "summary";
  }
  return "untyped";
}

// --- children

void Counter::inc(double v) noexcept {
  if (!(v >= 0)) return;  // also drops NaN
  add_relaxed(fraction_, v);
}

double Counter::value() const noexcept {
  return static_cast<double>(whole_.load(std::memory_order_relaxed)) +
         fraction_.load(std::memory_order_relaxed);
}

void Counter::append_value(std::string& out) const {
  double fraction = fraction_.load(std::memory_order_relaxed);
  uint64_t whole = whole_.load(std::memory_order_relaxed);
  if (fraction == 0) {
    append_uint(out, whole);  // exact even beyond 2^53
  } else {
    append_double(out, static_cast<double>(whole) + fraction);
  }
}

void Gauge::inc(double v) noexcept {
  add_relaxed(value_, v);
}

Histogram::Histogram(std::shared_ptr<const std::vector<double>> bounds)
    : bounds_(std::move(bounds)),
      counts_(std::make_unique<std::atomic<uint64_t>[]>(bounds_->size() + 1)) {}

void Histogram::observe(double v) noexcept {
  if (std::isnan(v)) return;
  const std::vector<double>& b = *bounds_;
  size_t i = std::lower_bound(b.begin(), b.end(), v) - b.begin();  // first bound >= v
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  add_relaxed(sum_, v);
}

std::vector<uint64_t> Histogram::bucket_counts() const {
  std::vector<uint64_t> out(bounds_->size() + 1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = counts_[i].load(std::memory_order_relaxed);
  return out;
}

uint64_t Histogram::count() const noexcept {
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_->size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
  }
  return total;
}

// Summary buckets: upper bounds kSummaryMin * kSummaryGrowth^i up to kSummaryMax.
constexpr double kSummaryMin = 1e-3;
constexpr double kSummaryMax = 1e7;
constexpr double kSummaryGrowth = 1.02;

const std::vector<double>& Summary::bounds() noexcept {
  static const std::vector<double> bounds = [] {
    std::vector<double> b{kSummaryMin};
    while (b.back() < kSummaryMax) b.push_back(b.back() * kSummaryGrowth);
    return b;
  }();
  return bounds;
}

Summary::Summary(std::shared_ptr<const std::vector<double>> quantiles, Clock::duration window)
    : quantiles_(std::move(quantiles)),
      window_(window),
      counts_(std::make_unique<std::atomic<uint64_t>[]>(bounds().size())) {
  const auto now = Clock::now();
  older_ = {now, std::vector<uint64_t>(bounds().size())};
  newer_ = older_;
}

void Summary::observe(double v) noexcept {
  if (std::isnan(v)) return;
  const std::vector<double>& b = bounds();
  size_t i = 0;
  if (v >= b.back()) {
    i = b.size() - 1;  // infinity too
  } else if (v > kSummaryMin) {
    // The first bound >= v: from the logarithm, then corrected for its rounding.
    const double at = std::ceil(std::log(v / kSummaryMin) / std::log(kSummaryGrowth));
    i = std::min(static_cast<size_t>(std::max(at, 0.0)), b.size() - 1);
    while (i > 0 && b[i - 1] >= v) --i;
    while (i + 1 < b.size() && b[i] < v) ++i;
  }
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  add_relaxed(sum_, v);
}

uint64_t Summary::count() const noexcept {
  uint64_t total = 0;
  for (size_t i = 0; i < bounds().size(); ++i) total += counts_[i].load(std::memory_order_relaxed);
  return total;
}

std::vector<uint64_t> Summary::read_counts() const {
  std::vector<uint64_t> out(bounds().size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = counts_[i].load(std::memory_order_relaxed);
  return out;
}

std::vector<double> Summary::estimate(Clock::time_point now) const {
  std::vector<uint64_t> counts = read_counts();
  std::lock_guard lock(mu_);
  if (now - newer_.at >= window_) {
    older_ = std::move(newer_);
    newer_ = {now, counts};
  }
  uint64_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    counts[i] -= older_.counts[i];  // counts only grow
    total += counts[i];
  }
  const std::vector<double>& b = bounds();
  std::vector<double> out;
  out.reserve(quantiles_->size());
  for (double q : *quantiles_) {
    if (total == 0) {
      out.push_back(std::numeric_limits<double>::quiet_NaN());
      continue;
    }
    // The rank of the q-quantile among `total` observations, 1-based: at least the first.
    const auto rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * total)));
    uint64_t seen = 0;
    size_t i = 0;
    for (; i < counts.size(); ++i) {
      seen += counts[i];
      if (seen >= rank) break;
    }
    out.push_back(b[std::min(i, b.size() - 1)]);
  }
  return out;
}

// --- families

FamilyBase::FamilyBase(std::string name, std::string help, Type type,
                       std::vector<std::string> label_names,
                       std::shared_ptr<const std::vector<double>> bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)),
      bounds_(std::move(bounds)) {}

void FamilyBase::expose(std::string& out) const {
  std::lock_guard lock(mu_);
  if (size_locked() == 0) return;
  out += "# HELP ";
  out += name_;
  out += ' ';
  append_escaped(out, help_, /*quote=*/false);
  out += "\n# TYPE ";
  out += name_;
  out += ' ';
  out += to_string(type_);
  out += '\n';
  expose_children_locked(out);
}

size_t FamilyBase::size() const {
  std::lock_guard lock(mu_);
  return size_locked();
}

void FamilyBase::check_arity(const Values& values) const {
  MAGNETAR_ASSERT(values.size() == label_names_.size(),
                  "metric " + name_ + " takes " + std::to_string(label_names_.size()) +
                      " label values, got " + std::to_string(values.size()));
}

std::string FamilyBase::format_labels(const Values& values) const {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += label_names_[i];
    out += "=\"";
    append_escaped(out, values[i], /*quote=*/true);
    out += '"';
  }
  return out;
}

namespace detail {

void append_samples(std::string& out, const std::string& name, const std::string& labels,
                    const Counter& c) {
  append_series(out, name, "", labels);
  c.append_value(out);
  out += '\n';
}

void append_samples(std::string& out, const std::string& name, const std::string& labels,
                    const Gauge& g) {
  append_series(out, name, "", labels);
  append_double(out, g.value());
  out += '\n';
}

void append_samples(std::string& out, const std::string& name, const std::string& labels,
                    const Histogram& h) {
  // One read of the buckets; _count is their total so that it always equals le="+Inf".
  std::vector<uint64_t> counts = h.bucket_counts();
  const std::vector<double>& bounds = h.bounds();
  std::string le;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    cumulative += counts[i];
    le = "le=\"";
    if (i < bounds.size()) {
      append_double(le, bounds[i]);
    } else {
      le += "+Inf";
    }
    le += '"';
    append_series(out, name, "_bucket", labels, le);
    append_uint(out, cumulative);
    out += '\n';
  }
  append_series(out, name, "_sum", labels);
  append_double(out, h.sum());
  out += '\n';
  append_series(out, name, "_count", labels);
  append_uint(out, cumulative);
  out += '\n';
}

void append_samples(std::string& out, const std::string& name, const std::string& labels,
                    const Summary& s) {
  const std::vector<double> estimates = s.estimate(Summary::Clock::now());
  const std::vector<double>& quantiles = s.quantiles();
  std::string quantile;
  for (size_t i = 0; i < quantiles.size(); ++i) {
    quantile = "quantile=\"";
    append_double(quantile, quantiles[i]);
    quantile += '"';
    append_series(out, name, "", labels, quantile);
    append_double(out, estimates[i]);
    out += '\n';
  }
  append_series(out, name, "_sum", labels);
  append_double(out, s.sum());
  out += '\n';
  append_series(out, name, "_count", labels);
  append_uint(out, s.count());
  out += '\n';
}

}  // namespace detail

void CallbackGaugeFamily::set_values(Callback callback, Values values) {
  check_arity(values);
  std::lock_guard lock(mu_);
  auto it = children_.find(values);
  if (it != children_.end()) {
    it->second.callback = std::move(callback);
    return;
  }
  std::string labels = format_labels(values);
  children_.emplace(std::move(values), Child{std::move(labels), std::move(callback)});
}

bool CallbackGaugeFamily::remove_values(const Values& values) {
  check_arity(values);
  // Taking mu_ waits out a scrape that may be running the callback right now.
  std::lock_guard lock(mu_);
  return children_.erase(values) > 0;
}

void CallbackGaugeFamily::expose_children_locked(std::string& out) const {
  for (const auto& [values, child] : children_) {
    append_series(out, name(), "", child.labels);
    append_double(out, child.callback ? child.callback() : 0.0);
    out += '\n';
  }
}

// --- registry

Result<Family<Counter>*> Registry::counter(std::string_view name, std::string_view help,
                                           std::vector<std::string> label_names) {
  auto family = std::make_unique<Family<Counter>>(std::string(name), std::string(help),
                                                  Type::kCounter, std::move(label_names), nullptr,
                                                  [] { return std::make_shared<Counter>(); });
  MAGNETAR_ASSIGN_OR_RETURN(FamilyBase * added, add(std::move(family)));
  return static_cast<Family<Counter>*>(added);
}

Result<Family<Gauge>*> Registry::gauge(std::string_view name, std::string_view help,
                                       std::vector<std::string> label_names) {
  auto family = std::make_unique<Family<Gauge>>(std::string(name), std::string(help), Type::kGauge,
                                                std::move(label_names), nullptr,
                                                [] { return std::make_shared<Gauge>(); });
  MAGNETAR_ASSIGN_OR_RETURN(FamilyBase * added, add(std::move(family)));
  return static_cast<Family<Gauge>*>(added);
}

Result<CallbackGaugeFamily*> Registry::callback_gauge(std::string_view name, std::string_view help,
                                                      std::vector<std::string> label_names) {
  auto family = std::make_unique<CallbackGaugeFamily>(std::string(name), std::string(help),
                                                      std::move(label_names));
  MAGNETAR_ASSIGN_OR_RETURN(FamilyBase * added, add(std::move(family)));
  return static_cast<CallbackGaugeFamily*>(added);
}

Result<Family<Histogram>*> Registry::histogram(std::string_view name, std::string_view help,
                                               std::vector<std::string> label_names,
                                               std::span<const double> bounds) {
  std::vector<double> b(bounds.begin(), bounds.end());
  if (!b.empty() && b.back() == std::numeric_limits<double>::infinity()) b.pop_back();
  for (size_t i = 0; i < b.size(); ++i) {
    if (!std::isfinite(b[i]) || (i > 0 && !(b[i - 1] < b[i]))) {
      return Status(Errc::kInvalidArgument, "histogram " + std::string(name) +
                                                ": bucket bounds must be finite and strictly "
                                                "increasing");
    }
  }
  MAGNETAR_TRY(check_reserved_label("histogram", name, label_names, "le"));
  auto shared = std::make_shared<const std::vector<double>>(std::move(b));
  auto family = std::make_unique<Family<Histogram>>(
      std::string(name), std::string(help), Type::kHistogram, std::move(label_names), shared,
      [shared] { return std::make_shared<Histogram>(shared); });
  MAGNETAR_ASSIGN_OR_RETURN(FamilyBase * added, add(std::move(family)));
  return static_cast<Family<Histogram>*>(added);
}

Result<Family<Summary>*> Registry::summary(std::string_view name, std::string_view help,
                                           std::vector<std::string> label_names,
                                           std::span<const double> quantiles,
                                           Summary::Clock::duration window) {
  std::vector<double> q(quantiles.begin(), quantiles.end());
  for (size_t i = 0; i < q.size(); ++i) {
    if (!(q[i] >= 0 && q[i] <= 1) || (i > 0 && !(q[i - 1] < q[i]))) {
      return Status(Errc::kInvalidArgument, "summary " + std::string(name) +
                                                ": quantiles must be in [0, 1] and strictly "
                                                "increasing");
    }
  }
  if (window <= Summary::Clock::duration::zero()) {
    return Status(Errc::kInvalidArgument,
                  "summary " + std::string(name) + ": the window must be positive");
  }
  MAGNETAR_TRY(check_reserved_label("summary", name, label_names, "quantile"));
  auto shared = std::make_shared<const std::vector<double>>(std::move(q));
  auto family = std::make_unique<Family<Summary>>(
      std::string(name), std::string(help), Type::kSummary, std::move(label_names), shared,
      [shared, window] { return std::make_shared<Summary>(shared, window); });
  MAGNETAR_ASSIGN_OR_RETURN(FamilyBase * added, add(std::move(family)));
  return static_cast<Family<Summary>*>(added);
}

Result<FamilyBase*> Registry::add(std::unique_ptr<FamilyBase> family) {
  const std::string& name = family->name();
  if (!valid_metric_name(name)) {
    return Status(Errc::kInvalidArgument, "invalid metric name `" + name + "`");
  }
  std::set<std::string_view> seen;
  for (const std::string& label : family->label_names()) {
    if (!valid_label_name(label)) {
      return Status(Errc::kInvalidArgument,
                    "metric " + name + ": invalid label name `" + label + "`");
    }
    if (!seen.insert(label).second) {
      return Status(Errc::kInvalidArgument,
                    "metric " + name + ": duplicate label name `" + label + "`");
    }
  }

  family->add_unlabeled_child();  // before it is shared: no lock contention

  std::lock_guard lock(mu_);
  if (auto it = families_.find(name); it != families_.end()) {
    const FamilyBase& old = *it->second;
    auto conflict = [&](std::string what) {
      return Status(Errc::kAlreadyExists, "metric " + name + " is already registered " + what);
    };
    if (old.type() != family->type()) {
      return conflict(std::string("as a ") + (old.type() == Type::kCallbackGauge
                                                  ? "callback gauge"
                                                  : std::string(to_string(old.type()))));
    }
    if (old.label_names() != family->label_names()) {
      return conflict("with labels " + join(old.label_names()));
    }
    if (old.help() != family->help()) return conflict("with other help text");
    if (old.bounds() != nullptr && *old.bounds() != *family->bounds()) {
      return conflict(old.type() == Type::kSummary ? "with other quantiles" : "with other buckets");
    }
    return it->second.get();
  }
  std::vector<std::string> samples = sample_names_of(*family);
  for (const std::string& sample : samples) {
    if (auto it = sample_names_.find(sample); it != sample_names_.end()) {
      return Status(Errc::kAlreadyExists, "metric " + name + ": sample name " + sample +
                                              " is already written by metric " + it->second);
    }
  }
  for (std::string& sample : samples) sample_names_.emplace(std::move(sample), name);
  FamilyBase* result = family.get();
  families_.emplace(name, std::move(family));
  return result;
}

std::string Registry::expose() const {
  // Families are never removed, so the pointers outlive the lock; scraping without it lets
  // callbacks register metrics and keeps registration from waiting on slow callbacks.
  std::vector<const FamilyBase*> families;
  {
    std::lock_guard lock(mu_);
    families.reserve(families_.size());
    for (const auto& [name, family] : families_) families.push_back(family.get());
  }
  std::string out;
  for (const FamilyBase* family : families) family->expose(out);
  return out;
}

Registry& default_registry() {
  // Deliberately leaked: threads still running during exit may update its children.
  static Registry* const registry = new Registry();
  return *registry;
}

}  // namespace magnetar::metrics
