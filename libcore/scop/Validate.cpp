// The checks every reader of scop/1, schedule/1, bound/1 and kernel/1 runs after parsing (see
// validate() in Scop.h): what a JSON Schema cannot say about a file edited by hand. The stages
// after the readers rely on these facts (a name resolves, a domain is bounded, an access has the
// arity of its tensor), so a violation is reported here, at the value that breaks it, instead of
// surfacing as a crash, an isl error or a hang deep inside a stage.
#include "polyk/Scop.h"

#include "polyk/Isl.h"
#include "polyk/Sizes.h"

#include <isl/map.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_set.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <map>
#include <set>

namespace polyk {

namespace {

std::string inQuotes(const std::string &s) { return "'" + s + "'"; }

class Validator {
public:
  Validator(const Scop &s, ScopLevel level) : s_(s), level_(level), ctx_(islCtx()) {}

  void run() {
    checkName(s_.name, s_.at.name, "program");
    for (const auto &[n, v] : s_.params) params_.insert(n);
    paramContext_ = isl::set(ctx_, paramDefaultsRange());
    for (const auto &t : s_.tensors) {
      if (params_.count(t.name)) fail(t.loc, "tensor " + inQuotes(t.name) + " has the name of a parameter");
    }
    checkStatementNames();
    for (const auto &st : s_.statements) checkStatement(st);
    checkInits();
    checkForms();
    checkRelayouts();
    if (level_ >= ScopLevel::Schedule) checkSchedule();
    if (level_ >= ScopLevel::Bound) checkKernels();
    if (level_ >= ScopLevel::Kernel && s_.launcher.empty()) fail(s_.at.launcher, "empty launcher signature");
  }

private:
  const Scop &s_;
  ScopLevel level_;
  isl::ctx ctx_;
  std::set<std::string> params_;
  isl::set paramContext_; // every parameter at least 1
  std::vector<isl::set> domains_; // per statement

  std::string paramDefaultsRange() const {
    std::string names, cons;
    for (const auto &[n, v] : s_.params) {
      names += (names.empty() ? "" : ", ") + n;
      cons += (cons.empty() ? "" : " and ") + n + " >= 1";
    }
    return "[" + names + "] -> { : " + cons + " }";
  }

  static void checkName(const std::string &name, const SourceLoc &at, const std::string &what) {
    if (!isIdentifier(name)) fail(at, what + " name " + inQuotes(name) + " is not an identifier");
  }

  /// The parameters an isl object uses are declared ones.
  void checkParams(isl_space *space, const SourceLoc &at) const {
    isl_size n = isl_space_dim(space, isl_dim_param);
    std::string undefined;
    for (isl_size i = 0; i < n && undefined.empty(); ++i) {
      const char *name = isl_space_get_dim_name(space, isl_dim_param, i);
      if (!name || !params_.count(name)) undefined = name ? name : "?";
    }
    isl_space_free(space);
    if (!undefined.empty()) fail(at, "undefined parameter " + inQuotes(undefined) + " (declare it under 'params')");
  }

  const TensorDecl &tensorNamed(const std::string &name, const SourceLoc &at) const {
    const TensorDecl *t = s_.tensor(name);
    if (!t) fail(at, "undefined tensor " + inQuotes(name));
    return *t;
  }

  void checkStatementNames() {
    std::map<std::string, const ScopStatement *> seen;
    for (const auto &st : s_.statements) {
      checkName(st.name, st.at.name, "statement");
      if (s_.tensor(st.name) || params_.count(st.name))
        fail(st.at.name, "statement " + inQuotes(st.name) + " has the name of a tensor or parameter");
      if (!seen.emplace(st.name, &st).second) fail(st.at.name, "statement " + inQuotes(st.name) + " defined twice");
    }
    if (s_.statements.empty()) fail(s_.at.statements, "no statements");
  }

  /// An access relation: from the statement's space, to a declared tensor of the right arity,
  /// single-valued, and inside the tensor at every instance of the domain.
  void checkAccess(const ScopStatement &st, const isl::set &domain, const std::string &text, const SourceLoc &at,
                   const std::string &expectTensor = "") {
    isl::map m(ctx_, text);
    checkParams(isl_map_get_space(m.get()), at);
    checkDomainSpace(st, domain, isl_map_get_space(m.get()), at, "access");
    if (!isl_map_has_tuple_name(m.get(), isl_dim_out)) fail(at, "the access names no tensor");
    std::string tensor = isl_map_get_tuple_name(m.get(), isl_dim_out);
    const TensorDecl &t = tensorNamed(tensor, at);
    if (!expectTensor.empty() && tensor != expectTensor)
      fail(at, "access to " + inQuotes(tensor) + " where the body reads " + inQuotes(expectTensor));
    if (m.range_tuple_dim() != t.shape.size())
      fail(at, "arity mismatch: tensor " + inQuotes(tensor) + " has " + std::to_string(t.shape.size()) +
                   " dimensions but the access gives " + std::to_string(m.range_tuple_dim()));
    isl::map onDomain = m.intersect_domain(domain).intersect_params(paramContext_);
    if (!onDomain.is_single_valued()) fail(at, "the access to " + inQuotes(tensor) + " is not a function of the instance");
    if (!onDomain.domain().is_equal(domain.intersect_params(paramContext_)))
      fail(at, "the access to " + inQuotes(tensor) + " is not defined at every instance of the domain");
    // A read of a padded tensor may fall outside it: it yields the padding value.
    bool paddedRead = !expectTensor.empty() && t.padding;
    if (!paddedRead && !onDomain.range().is_subset(isl::set(ctx_, tensorBox(s_, t))))
      fail(at, "access out of bounds: " + inQuotes(tensor) + " is read or written outside its shape [" + shapeText(t) + "]");
  }

  static std::string shapeText(const TensorDecl &t) {
    std::string s;
    for (size_t d = 0; d < t.shape.size(); ++d) s += (d ? ", " : "") + t.shape[d].str();
    return s;
  }

  /// `space`'s domain (or set) tuple is the statement's: its name and its number of dims.
  void checkDomainSpace(const ScopStatement &st, const isl::set &domain, isl_space *space, const SourceLoc &at,
                        const std::string &what) const {
    bool isMap = isl_space_is_map(space) == isl_bool_true;
    isl_dim_type type = isMap ? isl_dim_in : isl_dim_set;
    const char *name = isl_space_get_tuple_name(space, type);
    std::string got = name ? name : "";
    isl_size n = isl_space_dim(space, type);
    isl_space_free(space);
    if (got != st.name) fail(at, "the " + what + " is over " + inQuotes(got) + ", not statement " + inQuotes(st.name));
    if (n != (isl_size)domain.tuple_dim())
      fail(at, "arity mismatch: the " + what + " takes " + std::to_string(n) + " dims, the domain of " + inQuotes(st.name) +
                   " has " + std::to_string(domain.tuple_dim()));
  }

  void checkStatement(const ScopStatement &st) {
    // The domain: named after the statement, over declared parameters, bounded, not empty.
    isl::set domain(ctx_, st.domain);
    checkParams(isl_set_get_space(domain.get()), st.at.domain);
    const char *name = isl_set_get_tuple_name(domain.get());
    if (!name || st.name != name)
      fail(st.at.domain, "the domain names " + inQuotes(name ? name : "") + ", not statement " + inQuotes(st.name));
    if (domain.tuple_dim() > kMaxRank) fail(st.at.domain, "more than " + std::to_string(kMaxRank) + " dims");
    if (isl_set_is_bounded(domain.get()) != isl_bool_true)
      fail(st.at.domain, "unbounded domain: every dim of " + inQuotes(st.name) + " needs a lower and an upper bound");
    if (domain.intersect_params(paramContext_).is_empty()) fail(st.at.domain, "empty domain");
    domains_.push_back(domain);
    if (st.dims.size() != domain.tuple_dim())
      fail(st.at.dims, "arity mismatch: 'dims' lists " + std::to_string(st.dims.size()) + " entries, the domain has " +
                           std::to_string(domain.tuple_dim()) + " dims");
    for (const auto &d : st.dims)
      if (d != "parallel" && d != "reduced") fail(st.at.dims, "dims are 'parallel' or 'reduced', found " + inQuotes(d));

    // The recovery of the original iterators.
    std::set<std::string> iterators;
    for (const auto &it : st.iterators) {
      checkName(it, st.at.iterators, "iterator");
      if (!iterators.insert(it).second) fail(st.at.iterators, "iterator " + inQuotes(it) + " listed twice");
    }
    isl::multi_aff recovery(ctx_, st.recovery);
    checkParams(isl_multi_aff_get_space(recovery.get()), st.at.recovery);
    checkDomainSpace(st, domain, isl_multi_aff_get_domain_space(recovery.get()), st.at.recovery, "recovery");
    if (isl_multi_aff_dim(recovery.get(), isl_dim_out) != (isl_size)st.iterators.size())
      fail(st.at.recovery, "arity mismatch: the recovery gives " + std::to_string(isl_multi_aff_dim(recovery.get(), isl_dim_out)) +
                               " iterators, 'iterators' lists " + std::to_string(st.iterators.size()));

    // The accesses, and the body they belong to.
    checkAccess(st, domain, st.write, st.at.write);
    const TensorDecl &out = tensorNamed(isl::map(ctx_, st.write).range_tuple_id().name(), st.at.write);
    if (out.role == Role::Input) fail(st.at.write, "statement " + inQuotes(st.name) + " writes input tensor " + inQuotes(out.name));
    if (st.kind == StmtKind::Init) {
      if (!st.reads.empty()) fail(st.at.reads.front(), "an init statement reads nothing");
    } else {
      ExprPtr body;
      try {
        body = parseExpr(st.body);
      } catch (const ParseError &e) {
        fail(st.at.body.shifted(e.offset), e.message);
      }
      std::vector<const Access *> accesses;
      collectAccesses(body, accesses);
      if (accesses.size() != st.reads.size())
        fail(st.at.body, "body has " + std::to_string(accesses.size()) + " accesses but 'reads' lists " +
                             std::to_string(st.reads.size()));
      for (size_t k = 0; k < accesses.size(); ++k) {
        const Access &a = *accesses[k];
        const TensorDecl &t = tensorNamed(a.tensor, st.at.body.shifted(a.offset));
        if (a.indices.size() != t.shape.size())
          fail(st.at.body.shifted(a.offset), "arity mismatch: tensor " + inQuotes(a.tensor) + " has " +
                                                 std::to_string(t.shape.size()) + " dimensions but is indexed with " +
                                                 std::to_string(a.indices.size()));
        for (size_t d = 0; d < a.indices.size(); ++d)
          for (const auto &[name, c] : a.subscripts[d].terms)
            if (!iterators.count(name) && !(st.form == Form::Affine && params_.count(name)))
              fail(st.at.body.shifted(a.indexOffsets[d]), "undefined iterator " + inQuotes(name) + " (not in 'iterators')");
        checkAccess(st, domain, st.reads[k], st.at.reads[k], a.tensor);
      }
    }
    checkSource(st);
  }

  /// The original statement, which the sequential reference is printed from.
  void checkSource(const ScopStatement &st) const {
    if (st.source.empty()) fail(st.at.name, "statement " + inQuotes(st.name) + " has no 'source'");
    Program p;
    p.name = s_.name;
    p.params = s_.params;
    p.tensors = s_.tensors;
    auto parsed = [&](const std::string &text, const SourceLoc &at) {
      ProgramStatement ps;
      ps.text = text;
      ps.loc = at;
      try {
        ps.stmt = parseStatement(text);
      } catch (const ParseError &e) {
        fail(at.shifted(e.offset), e.message);
      }
      analyseStatement(ps, p);
      return ps;
    };
    ProgramStatement ps = parsed(st.source, st.at.source);
    if (st.kind != StmtKind::Assign && ps.stmt.reduceOp() != st.op)
      fail(st.at.source, "the source's reduction is not the statement's 'op'");
    // The affine path's reductions are assignments (update, store) whose source is the reduction;
    // its init and update write an accumulator temporary of the output's shape.
    bool affine = st.form == Form::Affine;
    if (st.kind == StmtKind::Assign && ps.stmt.assignOp != "=" && !affine && !unitDimReduction(ps, p))
      fail(st.at.source, "an assign statement's source must be an assignment ('=')");
    if (affine && st.kind == StmtKind::Assign && ps.stmt.reduceOp() && st.op && st.op != ps.stmt.reduceOp())
      fail(st.at.source, "the source's reduction is not the statement's 'op'");
    std::string written = isl::map(ctx_, st.write).range_tuple_id().name();
    auto accumulator = [&] {
      const TensorDecl *t = s_.tensor(written), *out = s_.tensor(ps.stmt.lhs.tensor);
      if (!affine || !ps.stmt.reduceOp() || !t || !out || t->role != Role::Temporary) return false;
      if (t->shape.size() != out->shape.size()) return false;
      for (size_t d = 0; d < t->shape.size(); ++d)
        if (t->shape[d].value != out->shape[d].value) return false;
      return true;
    };
    if (!st.epilogue.empty()) {
      // A fused consumer: an elementwise assignment, which writes what the statement writes.
      ProgramStatement ep = parsed(st.epilogue, st.at.epilogue);
      if (ep.stmt.assignOp != "=" || !affine)
        fail(st.at.epilogue, "an epilogue is an elementwise assignment ('=') fused into an affine statement");
      if (ep.stmt.lhs.tensor != written)
        fail(st.at.epilogue, "the epilogue writes " + inQuotes(ep.stmt.lhs.tensor) + " but the statement writes " + inQuotes(written));
      return;
    }
    if (ps.stmt.lhs.tensor != written && !isRelayoutOf(written, ps.stmt.lhs.tensor) && !accumulator())
      fail(st.at.source, "the source writes " + inQuotes(ps.stmt.lhs.tensor) + " but the statement writes " + inQuotes(written));
  }

  bool isRelayoutOf(const std::string &as, const std::string &tensor) const {
    for (const auto &r : s_.relayouts)
      if (r.as == as && r.tensor == tensor) return true;
    return false;
  }

  /// The affine path and the Panamera forms do not mix: each stage picks its path by the form.
  void checkForms() const {
    for (const auto &st : s_.statements)
      if ((st.form == Form::Affine) != (s_.statements.front().form == Form::Affine))
        fail(st.at.name, "statement " + inQuotes(st.name) + ": form 'affine' and the Panamera forms do not mix in one program");
  }

  void checkInits() {
    std::map<std::string, int> inits;
    for (const auto &st : s_.statements) {
      if (st.kind != StmtKind::Init) continue;
      const ScopStatement *r = s_.statement(st.reduction);
      if (!r) fail(st.at.initialises, "undefined statement " + inQuotes(st.reduction));
      // On the affine path the reduction is an assignment into an accumulator, with its op.
      bool affineUpdate = r->form == Form::Affine && r->kind == StmtKind::Assign && r->op;
      if (r->kind != StmtKind::Reduce && !affineUpdate)
        fail(st.at.initialises, "statement " + inQuotes(st.reduction) + " is not a reduction");
      if (r->op != st.op) fail(st.at.initialises, "the init's 'op' is not that of " + inQuotes(st.reduction));
      if (isl::map(ctx_, r->write).range_tuple_id().name() != isl::map(ctx_, st.write).range_tuple_id().name())
        fail(st.at.write, "the init writes another tensor than reduction " + inQuotes(st.reduction));
      if (++inits[st.reduction] > 1) fail(st.at.initialises, "reduction " + inQuotes(st.reduction) + " initialised twice");
    }
  }

  void checkRelayouts() const {
    for (const auto &r : s_.relayouts) {
      const TensorDecl &t = tensorNamed(r.tensor, r.loc);
      const TensorDecl &as = tensorNamed(r.as, r.loc);
      std::vector<int> sorted = r.order;
      std::sort(sorted.begin(), sorted.end());
      for (size_t d = 0; d < sorted.size(); ++d)
        if (sorted[d] != (int)d) sorted.clear();
      if (r.order.size() != t.shape.size() || sorted.size() != t.shape.size())
        fail(r.loc, "'order' must be a permutation of the " + std::to_string(t.shape.size()) + " dims of " + inQuotes(t.name));
      if (as.shape.size() != t.shape.size() || as.type != t.type)
        fail(r.loc, "relayout " + inQuotes(r.as) + " must have the type and rank of " + inQuotes(r.tensor));
      // A temporary re-laid out where it is written keeps its name and is declared permuted.
      for (size_t d = 0; d < r.order.size() && r.as != r.tensor; ++d)
        if (as.shape[d].str() != t.shape[r.order[d]].str())
          fail(r.loc, "relayout " + inQuotes(r.as) + " must have the shape of " + inQuotes(r.tensor) + " permuted by 'order'");
    }
  }

  /// The statement a space of a dependence or schedule belongs to, checked to exist with its arity.
  void checkStatementSpace(isl_space *space, isl_dim_type type, const SourceLoc &at) const {
    const char *name = isl_space_get_tuple_name(space, type);
    isl_size n = isl_space_dim(space, type);
    std::string got = name ? name : "";
    isl_space_free(space);
    const ScopStatement *st = s_.statement(got);
    if (!st) fail(at, "undefined statement " + inQuotes(got));
    size_t k = st - s_.statements.data();
    if (n != (isl_size)domains_[k].tuple_dim())
      fail(at, "arity mismatch: " + inQuotes(got) + " with " + std::to_string(n) + " dims, its domain has " +
                   std::to_string(domains_[k].tuple_dim()));
  }

  void checkDependences(const std::string &text, const SourceLoc &at) const {
    isl::union_map deps(ctx_, text);
    checkParams(isl_union_map_get_space(deps.get()), at);
    isl::map_list maps = deps.get_map_list();
    for (int i = 0; i < (int)maps.size(); ++i) {
      checkStatementSpace(isl_map_get_space(maps.at(i).get()), isl_dim_in, at);
      checkStatementSpace(isl_map_get_space(maps.at(i).get()), isl_dim_out, at);
    }
  }

  /// Visits every node of the tree, top down.
  static void forEachNode(const isl::schedule &tree, const std::function<void(isl_schedule_node *)> &visit) {
    struct Ctx {
      const std::function<void(isl_schedule_node *)> *visit;
    } c{&visit};
    isl_schedule_foreach_schedule_node_top_down(
        tree.get(),
        [](isl_schedule_node *node, void *user) -> isl_bool {
          (*static_cast<Ctx *>(user)->visit)(node);
          return isl_bool_true;
        },
        &c);
  }

  void checkSchedule() {
    isl::schedule tree = readIslSchedule(s_.schedule);
    const SourceLoc &at = s_.at.schedule;
    // The tree covers exactly the statements the file declares, each over its whole domain.
    isl::union_set covered = isl::manage(isl_schedule_get_domain(tree.get()));
    if (covered.is_null()) fail(at, "the schedule tree has no domain");
    checkParams(isl_union_set_get_space(covered.get()), at);
    isl::set_list sets = covered.get_set_list();
    for (int i = 0; i < (int)sets.size(); ++i) checkStatementSpace(isl_set_get_space(sets.at(i).get()), isl_dim_set, at);
    for (size_t k = 0; k < s_.statements.size(); ++k) {
      isl::set mine = covered.extract_set(domains_[k].get_space());
      if (!mine.is_equal(domains_[k]))
        fail(at, mine.is_empty() ? "the schedule misses statement " + inQuotes(s_.statements[k].name)
                                 : "the schedule covers statement " + inQuotes(s_.statements[k].name) +
                                       " over another domain than its 'domain'");
    }
    checkDependences(s_.flow, s_.at.flow);
    checkDependences(s_.reductionDeps, s_.at.reduction);

    // Marks: kernel_k numbered 0..n-1 in tree order, not nested; the mapping marks inside one.
    std::vector<int> kernels;
    std::vector<int> bandMembers; // per kernel: members of its outermost band, -1 for none
    std::string error;
    forEachNode(tree, [&](isl_schedule_node *node) {
      if (!error.empty() || isl_schedule_node_get_type(node) != isl_schedule_node_mark) return;
      isl_id *id = isl_schedule_node_mark_get_id(node);
      std::string name = isl_id_get_name(id) ? isl_id_get_name(id) : "";
      isl_id_free(id);
      int depth = kernelDepth(node);
      if (name.rfind("kernel_", 0) == 0) {
        std::string digits = name.substr(7);
        if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos)
          error = "bad kernel mark " + inQuotes(name) + " (expected kernel_<number>)";
        else if (depth > 0) error = "kernel mark " + inQuotes(name) + " inside another kernel";
        else {
          kernels.push_back(std::stoi(digits));
          bandMembers.push_back(firstBandMembers(node));
        }
      } else if (name == "reduction" || name == "registers" || name == "shared" || name == "map_block" || isMappingMark(name)) {
        if (depth == 0) error = "mark " + inQuotes(name) + " outside any kernel";
        else if (name == "shared" && (!isAffine() || level_ < ScopLevel::Bound)) error = "mark \"shared\" outside an affine bound tree";
        else if (name == "map_block" && (!isAffine() || level_ < ScopLevel::Bound)) error = "mark \"map_block\" outside an affine bound tree";
        else if (name == "map_block" && !mapMarks_.insert(kernels.size() - 1).second)
          error = "kernel_" + std::to_string(kernels.back()) + " has two \"map_block\" marks";
        else if (name == "shared" && sharedMarks_[kernels.size() - 1]++ > 0)
          error = "kernel_" + std::to_string(kernels.back()) + " has two \"shared\" marks";
        else if (name == "shared" && !sharedMarkFits(node)) error = "mark \"shared\" must sit between a band and a threads_ mark";
      } else {
        error = "unknown mark " + inQuotes(name);
      }
    });
    if (!error.empty()) fail(at, error);
    for (size_t k = 0; k < kernels.size(); ++k)
      if (kernels[k] != (int)k) fail(at, "kernel marks must be kernel_0, kernel_1, ... in order; found kernel_" + std::to_string(kernels[k]) + " in place " + std::to_string(k));
    kernelCount_ = kernels.size();

    // Sizes: a tile and a block per member of each kernel's band.
    std::map<int, KernelSizes> sizes = parseSizes(s_.sizes, &s_.at.sizes);
    for (const auto &[k, sz] : sizes) {
      if (k >= (int)kernelCount_) fail(s_.at.sizes, "sizes for kernel[" + std::to_string(k) + "], which the schedule does not have");
      if (sz.tile.size() != sz.block.size())
        fail(s_.at.sizes, "arity mismatch: kernel[" + std::to_string(k) + "] has " + std::to_string(sz.tile.size()) +
                              " tile sizes and " + std::to_string(sz.block.size()) + " block sizes");
      if (bandMembers[k] >= 0 && sz.tile.size() != (size_t)bandMembers[k])
        fail(s_.at.sizes, "arity mismatch: kernel[" + std::to_string(k) + "] has " + std::to_string(sz.tile.size()) +
                              " tile sizes for a band of " + std::to_string(bandMembers[k]) + " members");
      for (size_t m = 0; m < sz.block.size(); ++m)
        if (sz.block[m] > 1024) fail(s_.at.sizes, "kernel[" + std::to_string(k) + "]: more than 1024 threads along a dim");
    }
  }

  bool isAffine() const { return !s_.statements.empty() && s_.statements.front().form == Form::Affine; }

  /// A `shared` mark's parent is a band (its prefix: the bands above) and its child a threads_
  /// mark (the threads copy together before they split).
  static bool sharedMarkFits(isl_schedule_node *mark) {
    if (isl_schedule_node_has_parent(mark) != isl_bool_true || isl_schedule_node_has_children(mark) != isl_bool_true) return false;
    isl_schedule_node *parent = isl_schedule_node_parent(isl_schedule_node_copy(mark));
    isl_schedule_node *child = isl_schedule_node_child(isl_schedule_node_copy(mark), 0);
    bool ok = isl_schedule_node_get_type(parent) == isl_schedule_node_band && isl_schedule_node_get_type(child) == isl_schedule_node_mark;
    if (ok) {
      isl_id *id = isl_schedule_node_mark_get_id(child);
      ok = std::string(isl_id_get_name(id) ? isl_id_get_name(id) : "").rfind("threads_", 0) == 0;
      isl_id_free(id);
    }
    isl_schedule_node_free(parent);
    isl_schedule_node_free(child);
    return ok;
  }

  /// blocks_ / threads_ with the axes of the band's members: x or y, each once, on the Panamera
  /// path; on the affine path also z, any number of times (those members fold into one axis).
  bool isMappingMark(const std::string &name) const {
    for (const char *prefix : {"blocks_", "threads_"}) {
      std::string p = prefix;
      if (name.rfind(p, 0) != 0) continue;
      std::string axes = name.substr(p.size());
      if (axes == "x" || axes == "y" || axes == "x_y" || axes == "y_x") return true;
      if (s_.statements.empty() || s_.statements.front().form != Form::Affine) return false;
      int x = 0, y = 0;
      for (size_t i = 0; i < axes.size(); i += 2) {
        char a = axes[i];
        if ((a != 'x' && a != 'y' && a != 'z') || (i + 1 < axes.size() && axes[i + 1] != '_')) return false;
        x += a == 'x', y += a == 'y';
      }
      return !axes.empty() && x <= 1 && y <= 1;
    }
    return false;
  }

  /// The members of the first band below a kernel mark (through the marks between), or -1.
  static int firstBandMembers(isl_schedule_node *mark) {
    isl_schedule_node *n = isl_schedule_node_copy(mark);
    while (isl_schedule_node_get_type(n) == isl_schedule_node_mark && isl_schedule_node_has_children(n) == isl_bool_true)
      n = isl_schedule_node_child(n, 0);
    int members = isl_schedule_node_get_type(n) == isl_schedule_node_band ? (int)isl_schedule_node_band_n_member(n) : -1;
    isl_schedule_node_free(n);
    return members;
  }

  /// The number of kernel marks above `node`.
  static int kernelDepth(isl_schedule_node *node) {
    int depth = 0;
    isl_schedule_node *n = isl_schedule_node_copy(node);
    while (isl_schedule_node_has_parent(n) == isl_bool_true) {
      n = isl_schedule_node_parent(n);
      if (isl_schedule_node_get_type(n) == isl_schedule_node_mark) {
        isl_id *id = isl_schedule_node_mark_get_id(n);
        if (std::string(isl_id_get_name(id) ? isl_id_get_name(id) : "").rfind("kernel_", 0) == 0) ++depth;
        isl_id_free(id);
      }
    }
    isl_schedule_node_free(n);
    return depth;
  }

  size_t kernelCount_ = 0;
  std::map<size_t, int> sharedMarks_; // kernel index -> its "shared" marks
  std::set<size_t> mapMarks_;         // kernels with a "map_block" mark (a fused map's)

  void checkKernels() const {
    if (s_.kernels.size() != kernelCount_)
      fail(s_.at.kernels, "'kernels' lists " + std::to_string(s_.kernels.size()) + " kernels, the schedule tree marks " +
                              std::to_string(kernelCount_));
    std::set<std::string> names;
    std::map<std::string, std::string> kernelOf;
    for (const auto &k : s_.kernels) {
      checkName(k.name, k.at.name, "kernel");
      if (!names.insert(k.name).second) fail(k.at.name, "kernel " + inQuotes(k.name) + " defined twice");
      if (k.statements.empty()) fail(k.at.kernel, "kernel " + inQuotes(k.name) + " has no statements");
      for (size_t i = 0; i < k.statements.size(); ++i) {
        const SourceLoc &at = i < k.at.statements.size() ? k.at.statements[i] : k.at.kernel;
        if (!s_.statement(k.statements[i])) fail(at, "undefined statement " + inQuotes(k.statements[i]));
        auto [it, fresh] = kernelOf.emplace(k.statements[i], k.name);
        if (!fresh) fail(at, "statement " + inQuotes(k.statements[i]) + " is in kernels " + inQuotes(it->second) + " and " + inQuotes(k.name));
      }
      for (size_t i = 0; i < k.promoted.size(); ++i) {
        const SourceLoc &at = i < k.at.promoted.size() ? k.at.promoted[i] : k.at.kernel;
        const TensorDecl *t = s_.tensor(k.promoted[i]);
        if (!t) fail(at, "undefined tensor " + inQuotes(k.promoted[i]));
        if (t->role != Role::Temporary) fail(at, "only temporaries can be promoted; " + inQuotes(t->name) + " is an " + roleName(t->role));
      }
      size_t index = (size_t)(&k - s_.kernels.data());
      if (mapMarks_.count(index)) {
        // A fused map kernel's `shared`: the intermediates whose block rows it keeps in shared memory.
        for (size_t i = 0; i < k.shared.size(); ++i) {
          const SourceLoc &at = i < k.at.shared.size() ? k.at.shared[i] : k.at.kernel;
          const TensorDecl *t = s_.tensor(k.shared[i]);
          if (!t) fail(at, "undefined tensor " + inQuotes(k.shared[i]));
          if (t->role == Role::Output) fail(at, "a fused map kernel keeps temporaries and inputs in shared memory; " + inQuotes(t->name) + " is an output");
        }
        continue;
      }
      bool marked = sharedMarks_.count(index) > 0;
      if (marked != !k.shared.empty())
        fail(k.at.kernel, marked ? "kernel " + inQuotes(k.name) + " has a \"shared\" mark but stages no tensor ('shared')"
                                 : "kernel " + inQuotes(k.name) + " stages tensors ('shared') but has no \"shared\" mark");
      std::set<std::string> staged;
      for (size_t i = 0; i < k.shared.size(); ++i) {
        const SourceLoc &at = i < k.at.shared.size() ? k.at.shared[i] : k.at.kernel;
        const TensorDecl *t = s_.tensor(k.shared[i]);
        if (!t) fail(at, "undefined tensor " + inQuotes(k.shared[i]));
        if (t->shape.empty()) fail(at, "a scalar cannot be staged in shared memory");
        if (!staged.insert(t->name).second) fail(at, "tensor " + inQuotes(t->name) + " staged twice");
        bool read = false;
        for (const auto &name : k.statements) {
          const ScopStatement *st = s_.statement(name);
          if (isl::map(islCtx(), st->write).range_tuple_id().name() == t->name)
            fail(at, "tensor " + inQuotes(t->name) + " is written in kernel " + inQuotes(k.name) + "; only what it reads can be staged");
          for (const auto &r : st->reads) read |= isl::map(islCtx(), r).range_tuple_id().name() == t->name;
        }
        if (!read) fail(at, "kernel " + inQuotes(k.name) + " does not read tensor " + inQuotes(t->name));
      }
      for (const auto &[name, order] : k.sharedLayout) {
        const SourceLoc &at = k.at.sharedLayout.count(name) ? k.at.sharedLayout.at(name) : k.at.kernel;
        if (!staged.count(name)) fail(at, "'shared_layout' of " + inQuotes(name) + ", which kernel " + inQuotes(k.name) + " does not stage");
        std::vector<int> sorted = order;
        std::sort(sorted.begin(), sorted.end());
        bool permutation = sorted.size() == s_.tensor(name)->shape.size();
        for (size_t d = 0; permutation && d < sorted.size(); ++d) permutation = sorted[d] == (int)d;
        if (!permutation)
          fail(at, "'shared_layout' of " + inQuotes(name) + " must list each of its " + std::to_string(s_.tensor(name)->shape.size()) +
                       " dims once");
      }
      for (int a = 0; a < 3; ++a) checkGrid(k.grid[a], a, k.at.grid);
      for (const auto &axis : {k.reduceAxis, k.reduceBlockAxis})
        if (axis != "none" && axis != "x" && axis != "y") fail(k.at.kernel, "reduction axes are none, x or y");
    }
    for (const auto &st : s_.statements)
      if (!kernelOf.count(st.name)) fail(s_.at.kernels, "statement " + inQuotes(st.name) + " is in no kernel");
  }

  /// A grid extent is printed into the launcher: a positive number, or an arithmetic expression
  /// of the parameters (`((P + 255) / 256)`).
  void checkGrid(const std::string &g, int axis, const SourceLoc &at) const {
    const long long limit = axis == 0 ? (1LL << 31) - 1 : 65535;
    std::string bad = "grid extent " + inQuotes(g) + " must be a number from 1 to " + std::to_string(limit) +
                      " or an expression of the parameters with + - * / ( )";
    if (g.empty() || g.size() > 200) fail(at, bad);
    if (g.find_first_not_of("0123456789") == std::string::npos) {
      if (g.size() > 10 || std::stoll(g) < 1 || std::stoll(g) > limit) fail(at, bad);
      return;
    }
    // expr := operand (op operand)*, operand := number | parameter | ( expr ): after an operand
    // comes an operator, ')' or the end; before one, a number, a parameter or '('.
    int depth = 0;
    bool afterOperand = false;
    for (size_t i = 0; i < g.size();) {
      char c = g[i];
      if (c == ' ') {
        ++i;
        continue;
      }
      if (std::isalnum((unsigned char)c) || c == '_') {
        size_t j = i;
        while (j < g.size() && (std::isalnum((unsigned char)g[j]) || g[j] == '_')) ++j;
        std::string word = g.substr(i, j - i);
        bool number = word.find_first_not_of("0123456789") == std::string::npos;
        if (!number && !params_.count(word)) fail(at, "undefined parameter " + inQuotes(word) + " in grid extent");
        if (afterOperand || (number && word.size() > 10)) fail(at, bad);
        afterOperand = true;
        i = j;
        continue;
      }
      if (c == '(' && !afterOperand) ++depth;
      else if (c == ')' && afterOperand && depth > 0) --depth;
      else if (std::strchr("+-*/", c) && afterOperand) afterOperand = false;
      else fail(at, bad);
      ++i;
    }
    if (depth != 0 || !afterOperand) fail(at, bad);
  }
};

} // namespace

void validate(const Scop &s, ScopLevel level) { Validator(s, level).run(); }

} // namespace polyk
