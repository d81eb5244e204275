#include "common/buffer.h"

#include <cstring>
#include <new>

#include "common/status.h"

namespace magnetar {

// Header placed in front of the bytes in one allocation.
struct Buffer::Block {
  std::atomic<long> refs;
  size_t capacity;
  uint8_t* bytes() noexcept { return reinterpret_cast<uint8_t*>(this + 1); }
};
static_assert(sizeof(std::atomic<long>) + sizeof(size_t) <= 16, "block header stays small");

Buffer::Buffer(const Buffer& other) noexcept
    : block_(other.block_), data_(other.data_), size_(other.size_) {
  if (block_ != nullptr) block_->refs.fetch_add(1, std::memory_order_relaxed);
}

Buffer::Buffer(Buffer&& other) noexcept
    : block_(other.block_), data_(other.data_), size_(other.size_) {
  other.block_ = nullptr;
  other.data_ = nullptr;
  other.size_ = 0;
}

Buffer& Buffer::operator=(const Buffer& other) noexcept {
  if (this != &other) {
    if (other.block_ != nullptr) other.block_->refs.fetch_add(1, std::memory_order_relaxed);
    release();
    block_ = other.block_;
    data_ = other.data_;
    size_ = other.size_;
  }
  return *this;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    block_ = other.block_;
    data_ = other.data_;
    size_ = other.size_;
    other.block_ = nullptr;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

Buffer::~Buffer() { release(); }

void Buffer::release() noexcept {
  if (block_ != nullptr && block_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    block_->~Block();
    ::operator delete(block_);
  }
  block_ = nullptr;
}

Buffer Buffer::allocate(size_t size) {
  void* mem = ::operator new(sizeof(Block) + size);
  Block* block = new (mem) Block{{1}, size};
  return Buffer(block, block->bytes(), size);
}

Buffer Buffer::copy_of(const void* data, size_t size) {
  Buffer b = allocate(size);
  if (size > 0) std::memcpy(b.mutable_data(), data, size);
  return b;
}

uint8_t* Buffer::mutable_data() {
  MAGNETAR_ASSERT(block_ == nullptr || block_->refs.load(std::memory_order_acquire) == 1,
                  "mutable_data() on a shared buffer");
  return const_cast<uint8_t*>(data_);
}

Buffer Buffer::slice(size_t offset, size_t length) const {
  MAGNETAR_ASSERT(offset <= size_ && length <= size_ - offset, "Buffer::slice out of range");
  if (length == 0) return Buffer();
  block_->refs.fetch_add(1, std::memory_order_relaxed);
  return Buffer(block_, data_ + offset, length);
}

void Buffer::trim_front(size_t n) {
  MAGNETAR_ASSERT(n <= size_, "Buffer::trim_front past the end");
  data_ += n;
  size_ -= n;
}

void Buffer::truncate(size_t new_size) {
  MAGNETAR_ASSERT(new_size <= size_, "Buffer::truncate can only shrink");
  size_ = new_size;
}

long Buffer::use_count() const noexcept {
  return block_ == nullptr ? 0 : block_->refs.load(std::memory_order_relaxed);
}

bool operator==(const Buffer& a, const Buffer& b) noexcept { return a.view() == b.view(); }

void BufferChain::append(Buffer b) {
  if (b.empty()) return;
  size_ += b.size();
  parts_.push_back(std::move(b));
}

void BufferChain::append(const BufferChain& other) {
  for (const Buffer& b : other.parts_) append(b);
}

void BufferChain::clear() noexcept {
  parts_.clear();
  size_ = 0;
}

void BufferChain::copy_to(size_t offset, size_t n, uint8_t* out) const {
  MAGNETAR_ASSERT(offset <= size_ && n <= size_ - offset, "BufferChain::copy_to out of range");
  for (const Buffer& b : parts_) {
    if (n == 0) break;
    if (offset >= b.size()) {
      offset -= b.size();
      continue;
    }
    size_t take = std::min(n, b.size() - offset);
    std::memcpy(out, b.data() + offset, take);
    out += take;
    n -= take;
    offset = 0;
  }
}

BufferChain BufferChain::slice(size_t offset, size_t length) const {
  MAGNETAR_ASSERT(offset <= size_ && length <= size_ - offset, "BufferChain::slice out of range");
  BufferChain out;
  for (const Buffer& b : parts_) {
    if (length == 0) break;
    if (offset >= b.size()) {
      offset -= b.size();
      continue;
    }
    size_t take = std::min(length, b.size() - offset);
    out.append(b.slice(offset, take));
    length -= take;
    offset = 0;
  }
  return out;
}

void BufferChain::consume(size_t n) {
  MAGNETAR_ASSERT(n <= size_, "BufferChain::consume past the end");
  size_ -= n;
  size_t drop = 0;
  while (n > 0) {
    Buffer& front = parts_[drop];
    if (n >= front.size()) {
      n -= front.size();
      ++drop;
    } else {
      front.trim_front(n);
      n = 0;
    }
  }
  parts_.erase(parts_.begin(), parts_.begin() + static_cast<std::ptrdiff_t>(drop));
}

Buffer BufferChain::take_front(size_t n) {
  MAGNETAR_ASSERT(n <= size_, "BufferChain::take_front past the end");
  Buffer out;
  if (n == 0) return out;
  if (parts_.front().size() >= n) {
    out = parts_.front().slice(0, n);
  } else {
    out = Buffer::allocate(n);
    copy_to(0, n, out.mutable_data());
  }
  consume(n);
  return out;
}

Buffer BufferChain::flatten() const {
  if (parts_.size() == 1) return parts_.front();
  if (parts_.empty()) return Buffer();
  Buffer out = Buffer::allocate(size_);
  copy_to(0, size_, out.mutable_data());
  return out;
}

std::string BufferChain::to_string() const {
  std::string s(size_, '\0');
  copy_to(0, size_, reinterpret_cast<uint8_t*>(s.data()));
  return s;
}

}  // namespace magnetar
