// `magnetar tokens ...`: Pulsar's `pulsar tokens` (reference pulsar-security-proxy.md §2.2),
// with its subcommands, flags and output, so scripts that make keys and tokens keep working.
//
//   create-secret-key [-a HS256] [-o FILE] [-b]      a random secret: raw to FILE or stdout,
//                                                    base64 text with -b
//   create-key-pair [-a RS256] --output-private-key F --output-public-key F
//                                                    PKCS#8 and X.509 DER files; prints nothing
//   create -s SUBJECT [-e EXPIRY] (-sk KEY | -pk KEY) [-a ALG] [-hs k=v ...]
//                                                    the token and a newline
//   show [TOKEN | -i | -f FILE | $TOKEN]             header, "---", claims (not verified)
//   validate [TOKEN | -i | -f FILE | $TOKEN] (-sk KEY | -pk KEY) [-a RS256]
//                                                    the claims as a Java map, exit 0; else
//                                                    the reason on stderr, exit 1
// Keys take Pulsar's forms (data:, file:, a path, base64).

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "auth/base64.h"
#include "auth/jwt.h"
#include "common/units.h"
#include "tools/commands.h"

namespace magnetar::tools {

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  return 1;
}

bool write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  return static_cast<bool>(out);
}

std::optional<auth::Algorithm> algorithm(const std::string& name) {
  return auth::algorithm_named(name);
}

// The token from the argument, -i (stdin), -f FILE or $TOKEN, trimmed.
Result<std::string> token_of(const TokensArgs& a) {
  std::string token;
  if (!a.token.empty()) {
    token = a.token;
  } else if (a.stdin_token) {
    token.assign(std::istreambuf_iterator<char>(std::cin), {});
  } else if (!a.token_file.empty()) {
    std::ifstream in(a.token_file, std::ios::binary);
    if (!in) return Status(Errc::kInvalidArgument, "cannot read " + a.token_file);
    token.assign(std::istreambuf_iterator<char>(in), {});
  } else if (const char* env = std::getenv("TOKEN"); env != nullptr) {
    token = env;
  } else {
    return Status(Errc::kInvalidArgument,
                  "Token needs to be either passed as an argument or through `--stdin`, "
                  "`--token-file` or by `TOKEN` environment variable");
  }
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.front()))) {
    token.erase(token.begin());
  }
  return token;
}

// The signing or verifying key given by -sk or -pk (exactly one).
Result<auth::TokenKey> key_of(const TokensArgs& a, bool for_signing) {
  if (a.secret_key.empty() == a.private_key.empty()) {
    return Status(Errc::kInvalidArgument,
                  for_signing ? "Need to specify either --secret-key or --private-key"
                              : "Need to specify either --secret-key or --public-key");
  }
  auto bytes = auth::read_key_value(a.secret_key.empty() ? a.private_key : a.secret_key);
  if (!bytes.ok()) return bytes.status();
  if (!a.secret_key.empty()) return auth::TokenKey::secret(std::move(*bytes));
  return for_signing ? auth::TokenKey::private_key(*bytes) : auth::TokenKey::public_key(*bytes);
}

// Pulsar prints claims as a Java map: {sub=app1, exp=1735689600}.
std::string java_map(const nlohmann::ordered_json& claims) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : claims.items()) {
    if (!first) out += ", ";
    first = false;
    out += key + "=";
    if (value.is_string()) {
      out += value.get<std::string>();
    } else if (value.is_array()) {
      out += "[";
      for (size_t i = 0; i < value.size(); ++i) {
        out += (i ? ", " : "") +
               (value[i].is_string() ? value[i].get<std::string>() : value[i].dump());
      }
      out += "]";
    } else {
      out += value.dump();
    }
  }
  return out + "}";
}

int create_secret_key(const TokensArgs& a) {
  auto alg = algorithm(a.algorithm.empty() ? "HS256" : a.algorithm);
  if (!alg || !auth::is_hmac(*alg)) return fail("The algorithm must be HS256, HS384 or HS512");
  const std::string secret = auth::generate_secret(*alg);
  if (secret.empty()) return fail("no random bytes for the key");
  const std::string out = a.base64 ? auth::base64_encode(secret) : secret;
  if (!a.output.empty()) {
    return write_file(a.output, out) ? 0 : fail("cannot write " + a.output);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

int create_key_pair(const TokensArgs& a) {
  auto alg = algorithm(a.algorithm.empty() ? "RS256" : a.algorithm);
  if (!alg || auth::is_hmac(*alg)) {
    return fail("The algorithm must be one of RS256, RS384, RS512, PS256, PS384, PS512, ES256, "
                "ES384, ES512");
  }
  auto pair = auth::generate_key_pair(*alg);
  if (!pair.ok()) return fail(pair.status().message());
  if (!write_file(a.private_key_file, pair->private_der)) {
    return fail("cannot write " + a.private_key_file);
  }
  if (!write_file(a.public_key_file, pair->public_der)) {
    return fail("cannot write " + a.public_key_file);
  }
  return 0;
}

int create(const TokensArgs& a) {
  auto key = key_of(a, true);
  if (!key.ok()) return fail(key.status().message());
  nlohmann::ordered_json claims = {{"sub", a.subject}};
  if (!a.expiry.empty()) {
    auto seconds = parse_relative_seconds(a.expiry);
    if (!seconds.ok()) return fail(seconds.status().message());
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    claims["exp"] = now + *seconds;
  }
  const auth::Algorithm alg = key->default_algorithm();
  std::vector<std::pair<std::string, std::string>> headers;
  for (const std::string& h : a.headers) {
    const auto eq = h.find('=');
    if (eq == std::string::npos || eq == 0) return fail("A header must be key=value: " + h);
    headers.emplace_back(h.substr(0, eq), h.substr(eq + 1));
  }
  auto token = auth::encode_jwt(claims, *key, alg, headers);
  if (!token.ok()) return fail(token.status().message());
  std::printf("%s\n", token->c_str());
  return 0;
}

int show(const TokensArgs& a) {
  auto token = token_of(a);
  if (!token.ok()) return fail(token.status().message());
  const auto first = token->find('.');
  const auto second = first == std::string::npos ? first : token->find('.', first + 1);
  if (second == std::string::npos) return fail("not a JWT: it needs three parts separated by '.'");
  auto header = auth::base64url_decode(std::string_view(*token).substr(0, first));
  auto claims = auth::base64url_decode(std::string_view(*token).substr(first + 1, second - first - 1));
  if (!header || !claims) return fail("not a JWT: its parts are not base64url");
  std::printf("%s\n---\n%s\n", header->c_str(), claims->c_str());
  return 0;
}

int validate(const TokensArgs& a) {
  auto token = token_of(a);
  if (!token.ok()) return fail(token.status().message());
  auto key = key_of(a, false);
  if (!key.ok()) return fail(key.status().message());
  auto jwt = auth::decode_jwt(*token);
  if (!jwt.ok()) return fail(jwt.status().message());
  auto named = jwt->header.find("alg");
  auto alg = named != jwt->header.end() && named->is_string()
                 ? algorithm(named->get<std::string>())
                 : std::nullopt;
  if (!alg || !key->fits(*alg)) return fail("the token's algorithm does not fit the key");
  if (!key->verify(*alg, jwt->signing_input, jwt->signature)) {
    return fail("JWT signature does not match locally computed signature.");
  }
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  if (auto exp = jwt->claims.find("exp"); exp != jwt->claims.end() && exp->is_number() &&
                                          exp->get<int64_t>() <= now) {
    return fail(fmt::format("JWT expired at {}. Current time: {}", exp->get<int64_t>(), now));
  }
  const auto dot = token->find('.');
  const auto ordered = nlohmann::ordered_json::parse(
      *auth::base64url_decode(std::string_view(*token).substr(dot + 1, token->rfind('.') - dot - 1)),
      nullptr, false);
  std::printf("%s\n", java_map(ordered).c_str());
  return 0;
}

}  // namespace

int run_tokens(const TokensArgs& args) {
  if (args.command == "create-secret-key") return create_secret_key(args);
  if (args.command == "create-key-pair") return create_key_pair(args);
  if (args.command == "create") return create(args);
  if (args.command == "show") return show(args);
  if (args.command == "validate") return validate(args);
  return fail("unknown tokens command " + args.command);
}

}  // namespace magnetar::tools
