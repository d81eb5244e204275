#pragma once
// Errors as values. Every module defines its own error enum (see protocol/errors.h for
// an example) registered as a std::error_category whose default_error_condition maps each
// code onto one of the generic conditions below, so that any caller can decide whether to
// retry without knowing the module: `status.is(Errc::kUnavailable)`.
//
// Exceptions are reserved for programming errors; MAGNETAR_ASSERT checks invariants in
// release builds too.

#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

namespace magnetar {

// Generic error conditions. What each one tells the caller:
enum class Errc {
  kOk = 0,
  kInvalidArgument,    // the request is wrong; retrying it unchanged fails again
  kNotFound,           // the named thing does not exist
  kAlreadyExists,      // the thing to create exists already
  kBadVersion,         // optimistic concurrency lost: re-read, then retry
  kFenced,             // someone else took over: give up, never retry
  kUnavailable,        // transient: retry with backoff
  kTimeout,            // no answer in time: state unknown, retry if idempotent
  kResourceExhausted,  // a limit was hit (size, memory, quota)
  kCorruption,         // stored or received bytes fail validation
  kIoError,            // local disk or OS failure
  kCancelled,          // the operation was abandoned (shutdown, close)
  kNotSupported,       // valid but not implemented by this peer/version
  kPermissionDenied,   // authenticated but not allowed
  kUnauthenticated,    // credentials missing or wrong
  kInternal,           // a bug or broken invariant
};

const std::error_category& generic_category() noexcept;
std::error_condition make_error_condition(Errc e) noexcept;
std::error_code make_error_code(Errc e) noexcept;
std::string_view to_string(Errc e) noexcept;

}  // namespace magnetar

template <>
struct std::is_error_condition_enum<magnetar::Errc> : std::true_type {};

namespace magnetar {

// An error code (from any module's category) plus a human-readable message with context.
// Default-constructed Status is OK. Cheap to move; copying copies the message.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(std::error_code code, std::string message)
      : code_(code), message_(std::move(message)) {}
  template <typename E>
    requires std::is_error_code_enum_v<E>
  Status(E e, std::string message) : Status(make_error_code(e), std::move(message)) {}
  Status(Errc e, std::string message) : Status(make_error_code(e), std::move(message)) {}

  static Status OK() { return Status(); }

  bool ok() const noexcept { return !code_; }
  explicit operator bool() const noexcept { return ok(); }
  const std::error_code& code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  // True when this status falls under the generic condition `e`.
  bool is(Errc e) const noexcept { return e == Errc::kOk ? ok() : code_ == e; }
  // Unavailable and timeouts may succeed on retry; bad version after a re-read.
  bool retriable() const noexcept {
    return is(Errc::kUnavailable) || is(Errc::kTimeout) || is(Errc::kBadVersion);
  }

  // "<category>.<code name>: <message>", or "OK".
  std::string to_string() const;

 private:
  std::error_code code_;
  std::string message_;
};

// A value or the Status explaining why there is none. Never holds an OK status.
template <typename T>
class [[nodiscard]] Result {
 public:
  static_assert(!std::is_same_v<std::decay_t<T>, Status>, "Result<Status> is meaningless");

  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(v_).ok()) {
      v_ = Status(Errc::kInternal, "Result constructed from an OK status");
    }
  }
  template <typename E>
    requires std::is_error_code_enum_v<E>
  Result(E e, std::string message) : Result(Status(e, std::move(message))) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  // Precondition: ok(). Violations are programming errors.
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // OK when a value is held.
  Status status() const& { return ok() ? Status() : std::get<1>(v_); }
  Status status() && { return ok() ? Status() : std::get<1>(std::move(v_)); }

  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Status> v_;
};

[[noreturn]] void assert_failed(const char* expr, const char* file, int line, std::string_view msg);

}  // namespace magnetar

// Invariant checks that stay on in release builds: a broken invariant in a storage
// system is better stopped than propagated to disk.
#define MAGNETAR_ASSERT(cond, msg)                                          \
  do {                                                                      \
    if (!(cond)) [[unlikely]] {                                             \
      ::magnetar::assert_failed(#cond, __FILE__, __LINE__, (msg));          \
    }                                                                       \
  } while (0)

#define MAGNETAR_CONCAT_INNER(a, b) a##b
#define MAGNETAR_CONCAT(a, b) MAGNETAR_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` (a Status) is not OK.
#define MAGNETAR_TRY(expr)                      \
  do {                                          \
    ::magnetar::Status _st = (expr);            \
    if (!_st.ok()) [[unlikely]] return _st;     \
  } while (0)

// The same inside a coroutine (Task<Status> or Task<Result<T>>).
#define MAGNETAR_CO_TRY(expr)                    \
  do {                                           \
    ::magnetar::Status _st = (expr);             \
    if (!_st.ok()) [[unlikely]] co_return _st;   \
  } while (0)

// `MAGNETAR_ASSIGN_OR_RETURN(auto x, compute());` unwraps a Result or returns its Status.
#define MAGNETAR_ASSIGN_OR_RETURN(lhs, expr) \
  MAGNETAR_ASSIGN_OR_RETURN_IMPL(MAGNETAR_CONCAT(_res_, __LINE__), lhs, expr)
#define MAGNETAR_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) [[unlikely]] return std::move(tmp).status(); \
  lhs = std::move(tmp).value()
