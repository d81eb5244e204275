# Every third-party library comes from a Debian package (scripts/install-deps.sh).
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS system)
find_package(RocksDB REQUIRED)
find_library(ZOOKEEPER_MT_LIBRARY zookeeper_mt REQUIRED)
find_path(ZOOKEEPER_INCLUDE_DIR zookeeper/zookeeper.h REQUIRED)
find_package(Protobuf REQUIRED)
# The etcd metadata backend's client (Debian's libgrpc++-dev, protobuf-compiler-grpc).
find_package(gRPC CONFIG REQUIRED)
find_program(GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(CLI11 REQUIRED)
find_package(GTest REQUIRED)
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
find_library(SNAPPY_LIBRARY snappy REQUIRED)
find_path(SNAPPY_INCLUDE_DIR snappy.h REQUIRED)
if(MAGNETAR_BENCH)
  find_package(benchmark REQUIRED)
endif()

# The allocator of every executable: jemalloc, unless a sanitizer brings its own. Large socket
# buffers next to many small per-request objects make glibc's malloc consolidate its bins on
# the bookie's request path (measurements: docs/performance.md). Linked with --no-as-needed:
# no symbol of ours names it, it replaces malloc by being loaded.
set(MAGNETAR_ALLOCATOR "jemalloc" CACHE STRING "Allocator linked into executables (jemalloc or glibc)")
if(MAGNETAR_SANITIZE OR MAGNETAR_FUZZ)
  set(MAGNETAR_ALLOCATOR "glibc")  # ASan's own malloc must stay in charge
endif()
add_library(magnetar_allocator INTERFACE)
if(MAGNETAR_ALLOCATOR STREQUAL "jemalloc")
  find_library(JEMALLOC_LIBRARY jemalloc REQUIRED)
  target_link_libraries(magnetar_allocator INTERFACE
    "-Wl,--push-state,--no-as-needed" ${JEMALLOC_LIBRARY} "-Wl,--pop-state")
elseif(NOT MAGNETAR_ALLOCATOR STREQUAL "glibc")
  message(FATAL_ERROR "MAGNETAR_ALLOCATOR must be jemalloc or glibc, not ${MAGNETAR_ALLOCATOR}")
endif()
