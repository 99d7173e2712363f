// polyk/multi_mpi.hpp -- polyk's multi-device runtime past one process: MPI (Debian's OpenMPI)
// between processes, each driving its own devices through a local backend (CpuBackend, or
// CudaBackend for one GPU a process).
//
// Every process runs the same program: the same launcher, the same enumerators, so the same
// tracker, replicated. Each runtime call therefore happens in the same order everywhere, and a copy
// between devices of two processes is one MPI_Send on the source's process matched by one MPI_Recv
// on the destination's, in program order (blocking calls cannot deadlock). Host arrays are
// replicated as well: every process passes the same inputs to upload, and download broadcasts
// each gathered segment from the process that holds it, so every process ends with the outputs.
// Data travels through a host staging buffer, which works for any local backend; with a
// CUDA-aware MPI the device pointers could go to MPI directly (not done yet).
#ifndef POLYK_MULTI_MPI_HPP
#define POLYK_MULTI_MPI_HPP

#include "polyk/multi.hpp"

#include <mpi.h>

#include <climits>
#include <vector>

namespace polyk::multi {

class MpiBackend : public Backend {
 public:
  // Global device d is local device d % L of process d / L, L = inner.devices() on every process.
  MpiBackend(Backend &inner, MPI_Comm comm) : in(inner), comm(comm) {
    check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(comm, &ranks), "MPI_Comm_size");
    int mine = inner.devices(), least = mine, most = mine;
    check(MPI_Allreduce(&mine, &least, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
    check(MPI_Allreduce(&mine, &most, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
    if (least != most)
      throw std::invalid_argument("polyk::multi::MpiBackend: every process must drive the same number of devices");
    perRank = mine;
  }
  int devices() const override { return perRank * ranks; }
  const char *name() const override { return "mpi"; }
  bool local(int dev) const override { return owner(dev) == rank; }
  size_t alignment() const override { return in.alignment(); }
  int process() const { return rank; }
  int processes() const { return ranks; }

  void *alloc(int dev, size_t bytes) override { return in.alloc(mustBeLocal(dev, "alloc"), bytes); }
  void release(int dev, void *p) override { in.release(mustBeLocal(dev, "release"), p); }
  void copy(int dst, void *to, int src, const void *from, size_t bytes) override {
    bool here = local(src), there = local(dst);
    if (here && there) {
      in.copy(dst % perRank, to, src % perRank, from, bytes);
    } else if (here) {
      staging.resize(bytes);
      in.download(staging.data(), src % perRank, from, bytes);
      transfer(staging.data(), bytes, owner(dst), true);
    } else if (there) {
      staging.resize(bytes);
      transfer(staging.data(), bytes, owner(src), false);
      in.upload(dst % perRank, to, staging.data(), bytes);
    }
  }
  void upload(int dst, void *to, const void *host, size_t bytes) override {
    if (local(dst))
      in.upload(dst % perRank, to, host, bytes);
  }
  // Collective: every process receives the segment.
  void download(void *host, int src, const void *from, size_t bytes) override {
    if (local(src))
      in.download(host, src % perRank, from, bytes);
    for (size_t done = 0; done < bytes; done += chunk) {
      int n = int(std::min(chunk, bytes - done));
      check(MPI_Bcast(static_cast<char *>(host) + done, n, MPI_BYTE, owner(src), comm), "MPI_Bcast");
    }
  }
  void fill(int dev, void *p, unsigned char byte, size_t bytes) override {
    if (local(dev))
      in.fill(dev % perRank, p, byte, bytes);
  }
  void activate(int dev) override { in.activate(mustBeLocal(dev, "activate")); }
  void *stream(int dev) override { return in.stream(mustBeLocal(dev, "stream")); }
  void synchronize() override { in.synchronize(); }

 private:
  static constexpr size_t chunk = size_t(1) << 30;  // MPI counts are int

  static void check(int err, const char *call) {
    if (err != MPI_SUCCESS)
      throw std::runtime_error(std::string("polyk::multi::MpiBackend: ") + call + " failed (" + std::to_string(err) + ")");
  }
  int owner(int dev) const {
    if (dev < 0 || dev >= devices())
      throw std::out_of_range("polyk::multi::MpiBackend: no device " + std::to_string(dev));
    return dev / perRank;
  }
  int mustBeLocal(int dev, const char *what) const {
    if (!local(dev))
      throw std::logic_error(std::string("polyk::multi::MpiBackend::") + what + ": device " + std::to_string(dev) +
          " belongs to process " + std::to_string(owner(dev)));
    return dev % perRank;
  }
  void transfer(unsigned char *data, size_t bytes, int peer, bool send) {
    for (size_t done = 0; done < bytes; done += chunk) {
      int n = int(std::min(chunk, bytes - done));
      if (send)
        check(MPI_Send(data + done, n, MPI_BYTE, peer, 0, comm), "MPI_Send");
      else
        check(MPI_Recv(data + done, n, MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE), "MPI_Recv");
    }
  }

  Backend &in;
  MPI_Comm comm;
  int rank = 0, ranks = 1, perRank = 1;
  std::vector<unsigned char> staging;
};

}  // namespace polyk::multi

#endif
