#include "common/ports.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace magnetar {
namespace {

// Closes the sockets bound so far when picking ends, either way.
struct BoundSockets {
  std::vector<int> fds;
  ~BoundSockets() {
    for (int fd : fds) ::close(fd);
  }
};

}  // namespace

Result<std::vector<int>> pick_free_ports(int count) {
  BoundSockets held;
  std::vector<int> ports;
  for (int i = 0; i < count; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Status(Errc::kIoError, "socket: " + std::system_category().message(errno));
    held.fds.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return Status(Errc::kIoError, "picking a free port on 127.0.0.1: " +
                                        std::system_category().message(errno));
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  return ports;
}

}  // namespace magnetar
