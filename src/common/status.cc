#include "common/status.h"

#include <cstdio>
#include <cstdlib>

namespace magnetar {
namespace {

class GenericCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "magnetar"; }
  std::string message(int c) const override {
    return std::string(to_string(static_cast<Errc>(c)));
  }
};

}  // namespace

const std::error_category& generic_category() noexcept {
  static const GenericCategory category;
  return category;
}

std::error_condition make_error_condition(Errc e) noexcept {
  return {static_cast<int>(e), generic_category()};
}

std::error_code make_error_code(Errc e) noexcept { return {static_cast<int>(e), generic_category()}; }

std::string_view to_string(Errc e) noexcept {
  switch (e) {
    case Errc::kOk: return "ok";
    case Errc::kInvalidArgument: return "invalid argument";
    case Errc::kNotFound: return "not found";
    case Errc::kAlreadyExists: return "already exists";
    case Errc::kBadVersion: return "bad version";
    case Errc::kFenced: return "fenced";
    case Errc::kUnavailable: return "unavailable";
    case Errc::kTimeout: return "timeout";
    case Errc::kResourceExhausted: return "resource exhausted";
    case Errc::kCorruption: return "corruption";
    case Errc::kIoError: return "I/O error";
    case Errc::kCancelled: return "cancelled";
    case Errc::kNotSupported: return "not supported";
    case Errc::kPermissionDenied: return "permission denied";
    case Errc::kUnauthenticated: return "unauthenticated";
    case Errc::kInternal: return "internal error";
  }
  return "unknown error";
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  std::string out = code_.category().name();
  out += ".";
  out += code_.message();
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

void assert_failed(const char* expr, const char* file, int line, std::string_view msg) {
  std::fprintf(stderr, "FATAL %s:%d: assertion `%s` failed: %.*s\n", file, line, expr,
               static_cast<int>(msg.size()), msg.data());
  std::fflush(stderr);
  std::abort();
}

}  // namespace magnetar
