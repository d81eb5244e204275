#pragma once
// Ref-counted, sliceable byte buffers.
//
// A Buffer is a view [data, data + size) into a heap block shared by every Buffer sliced
// from it; the block is freed when the last view goes away. Copying a Buffer copies the
// view and bumps an atomic count: no bytes move. Buffers may cross threads; the bytes are
// immutable once a buffer has been shared (mutable_data() asserts sole ownership).
//
// A BufferChain is an ordered list of Buffers read as one byte sequence: a frame header
// followed by a payload received earlier, for instance, written out with one gathered
// write and no copy.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace magnetar {

class Buffer {
 public:
  Buffer() noexcept = default;
  Buffer(const Buffer& other) noexcept;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(const Buffer& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  ~Buffer();

  // A new block of `size` uninitialised bytes, solely owned by the returned Buffer.
  static Buffer allocate(size_t size);
  static Buffer copy_of(const void* data, size_t size);
  static Buffer copy_of(std::string_view bytes) { return copy_of(bytes.data(), bytes.size()); }

  const uint8_t* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::string_view view() const noexcept {
    return {reinterpret_cast<const char*>(data_), size_};
  }
  std::span<const uint8_t> span() const noexcept { return {data_, size_}; }
  std::string to_string() const { return std::string(view()); }

  // Writable access; precondition: this is the only reference to the block.
  uint8_t* mutable_data();

  // A view of [offset, offset + length) sharing this block. Asserts the range is inside.
  Buffer slice(size_t offset, size_t length) const;
  Buffer slice(size_t offset) const { return slice(offset, size_ - offset); }
  // Shrinks this view in place (no reallocation).
  void trim_front(size_t n);
  void truncate(size_t new_size);

  // Number of Buffers sharing the block (0 for an empty default Buffer).
  long use_count() const noexcept;
  bool shares_block_with(const Buffer& other) const noexcept {
    return block_ != nullptr && block_ == other.block_;
  }

 private:
  struct Block;
  Buffer(Block* block, const uint8_t* data, size_t size) noexcept
      : block_(block), data_(data), size_(size) {}
  void release() noexcept;

  Block* block_ = nullptr;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

bool operator==(const Buffer& a, const Buffer& b) noexcept;

class BufferChain {
 public:
  BufferChain() = default;
  explicit BufferChain(Buffer b) { append(std::move(b)); }

  void append(Buffer b);
  void append(const BufferChain& other);
  void clear() noexcept;

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const std::vector<Buffer>& buffers() const noexcept { return parts_; }

  // Copies [offset, offset + n) into `out`; asserts the range is inside the chain.
  void copy_to(size_t offset, size_t n, uint8_t* out) const;
  // The bytes at [offset, offset + length) as Buffers sharing the original blocks.
  BufferChain slice(size_t offset, size_t length) const;
  // Drops the first n bytes (releasing blocks that are wholly consumed).
  void consume(size_t n);
  // Removes the first n bytes and returns them as one Buffer: zero-copy when they lie in
  // the first part (the common case for a decoder), else one copy.
  Buffer take_front(size_t n);
  // One contiguous Buffer: zero-copy when the chain has a single part, else one copy.
  Buffer flatten() const;
  std::string to_string() const;

 private:
  std::vector<Buffer> parts_;
  size_t size_ = 0;
};

}  // namespace magnetar
