// The CPU cost of authenticating one token, as a broker pays it on every CONNECT (and every
// refresh): decode, signature check, claims. HS256 (tokenSecretKey), RS256 and ES256
// (tokenPublicKey). Also the cost of a refused token with a forged signature.
//
//   build/release/bin/auth_bench

#include <benchmark/benchmark.h>

#include "auth/base64.h"
#include "auth/jwt.h"
#include "auth/token_authenticator.h"

namespace magnetar::auth {
namespace {

struct Setup {
  TokenAuthenticator provider;
  std::string token;
};

Setup make(Algorithm a) {
  TokenSettings s;
  std::optional<TokenKey> signer;
  if (is_hmac(a)) {
    const std::string secret = generate_secret(a);
    s.secret_key = "data:;base64," + base64_encode(secret);
    signer = *TokenKey::secret(secret);
  } else {
    auto pair = *generate_key_pair(a);
    s.public_key = "data:;base64," + base64_encode(pair.public_der);
    s.public_alg = std::string(name_of(a));
    signer = *TokenKey::private_key(pair.private_der);
  }
  const nlohmann::ordered_json claims = {{"sub", "app-role"}, {"exp", 4102444800}};
  return Setup{*TokenAuthenticator::create(s), *encode_jwt(claims, *signer, a)};
}

void run(benchmark::State& state, Algorithm a, bool forged) {
  Setup s = make(a);
  if (forged) s.token[s.token.size() - 5] = s.token[s.token.size() - 5] == 'A' ? 'B' : 'A';
  for (auto _ : state) {
    auto r = s.provider.authenticate(s.token, 1'700'000'000);
    benchmark::DoNotOptimize(r);
    if (std::holds_alternative<Authenticated>(r) == forged) state.SkipWithError("unexpected");
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_TokenHS256(benchmark::State& s) { run(s, Algorithm::kHS256, false); }
void BM_TokenRS256(benchmark::State& s) { run(s, Algorithm::kRS256, false); }
void BM_TokenES256(benchmark::State& s) { run(s, Algorithm::kES256, false); }
void BM_TokenHS256Forged(benchmark::State& s) { run(s, Algorithm::kHS256, true); }
void BM_TokenRS256Forged(benchmark::State& s) { run(s, Algorithm::kRS256, true); }
BENCHMARK(BM_TokenHS256);
BENCHMARK(BM_TokenRS256);
BENCHMARK(BM_TokenES256);
BENCHMARK(BM_TokenHS256Forged);
BENCHMARK(BM_TokenRS256Forged);

}  // namespace
}  // namespace magnetar::auth
