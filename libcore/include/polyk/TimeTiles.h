// Time tiling of an iterated stencil (`kernel[0] -> time[T]` in the sizes): each launch runs T
// steps of the program, every block computing its output tile widened by T times the stencil's
// reach in shared memory, the widening recomputed by the neighbouring blocks (overlapped tiling:
// Krishnamoorthy et al., PLDI 2007; Holewinski et al., ICS 2012). The reach is the read
// relation's offsets, the widened tile its T-step footprint; codegen/TimeTiles.cpp prints it.
#pragma once

#include "polyk/Scop.h"

#include <optional>
#include <string>
#include <vector>

namespace polyk {

/// The steps a launch where polyk-schedule time-tiles by itself: 8 (Hotspot 16384^2 x 150 steps on
/// the H100: one step a launch 192 ms, 4 steps 91, 8 steps 75, 12 steps 124;
/// bench/results/2026-11-26-h100-time-tiles.txt).
constexpr long long kAutoTimeTile = 8;

/// Why `s` cannot run `steps` steps a launch over output tiles of `tile` points (outermost dim
/// first), or "" where it can: it must iterate one swapped pair (out <- in); have one statement
/// that writes `out` at its own point and reads `in` at constant offsets only, over at most 3
/// dims; and the widened tile's two copies must fit 48 KB of shared memory.
std::string timeTileRefusal(const Scop &s, const std::vector<long long> &tile, long long steps);

/// Per dim, how far a step widens a time-tiled region (the reach below plus above); empty where
/// `s` cannot be time-tiled (polyk-tune's space: `k0.time`).
std::vector<long long> timeTileWidening(const Scop &s);

/// The output tile of a time-tiled kernel where the sizes give none: 32 x 64 points in 2-d, x
/// widened so the region's rows are a whole number of warps (32 x 88 for 4 steps of a 5-point
/// stencil, a region of 40 x 96).
std::vector<long long> defaultTimeTile(const Scop &s, unsigned rank, long long steps);

/// Streaming a stencil along its outermost dim (`kernel[0] -> stream[C]`, 2-d and 3-d): a block
/// owns a tile of each plane across the inner dims (`tile`, a multiple of its threads `block`,
/// outermost first, both 1 along the first dim) and walks C planes, each plane of the read tensor copied once into a ring of
/// shared-memory planes as deep as the reads reach along the outer dim, plus one (2.5-d blocking:
/// Micikevicius, GPGPU 2009). Why `s` cannot take it, or "": one statement writing its output at
/// its own point; one tensor read at constant offsets (the most of them), none past 8 a dim; the
/// ring within 48 KB. With `vector` > 1 the planes stay in registers (no ring: codegen/TimeTiles.h,
/// emitRegisterStreamed).
std::string streamRefusal(const Scop &s, const std::vector<long long> &block, const std::vector<long long> &tile, long long vector = 1);
/// The threads of a streamed kernel where the sizes give none: 1 x 8 x 32 (3-d), 1 x 256 (2-d).
std::vector<long long> defaultStreamBlock(unsigned rank);
/// Per dim, how far the streamed tensor's reads reach (below plus above); empty where `s` cannot
/// be streamed (polyk-tune's space: `k0.stream`).
std::vector<long long> streamWidening(const Scop &s);
/// The streamed tensor: the one read at the most distinct offsets (empty where none is).
std::string streamedTensor(const Scop &s);
/// A window reduction as the stencil statement it is, where `s` is one: its three statements
/// (init, an update whose reduced dims are a box of constant bounds, at most 64 points, the same
/// at every output; the store) become one that writes the store's value with the accumulator
/// unrolled into a chain of the update's operator over the box's points, in the order of the
/// sequential reference (`B(i, j) +=! A(i + u - 2, j + v - 2) * G(u, v)` -> `B(i, j) =
/// f32(((A(i - 2, j - 2) * G(0, 0)) + (A(i - 2, j - 1) * G(0, 1))) + ...)`); its temporary goes.
/// The stream functions above take such a program as that stencil (Gaussian2D's register streams).
std::optional<Scop> windowAsStencil(const Scop &s);

} // namespace polyk
