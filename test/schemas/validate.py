#!/usr/bin/python3
"""Validates polyk's file kinds against the JSON Schemas in schemas/.

Usage: /usr/bin/python3 test/schemas/validate.py BIN_DIR SRC_DIR
  BIN_DIR  directory with polyk-flatten, polyk-schedule, polyk-bind, polyk-emit, polyk-tune (build/bin)
  SRC_DIR  polyk's source tree (with schemas/ and examples/)

Checks, one line each:
  schema/KIND              the schema is a valid draft 2020-12 schema with the expected $id / header
  example/KIND             schemas/examples/KIND.example.yaml matches the schema
  example/KIND/reader      ... and the polyk tool that reads KIND accepts it
  pipeline/EXAMPLE/KIND    each examples/**/*.yaml through flatten, schedule, bind and
                           emit --kernel-info, every stage's output validated
  reject/CASE              a deliberately broken document that the schema must reject (and,
                           where a polyk tool reads that kind, the tool must reject too)
  space/EXAMPLE            polyk-tune space's output for each example matches space/1
  tuning/run               polyk-tune run's best.yaml (CPU runner, 2 trials) matches tuning/1
  partition/EXAMPLE        polyk-partition's output for each example's bound file matches partition/1
  fusion/EXAMPLE           polyk-schedule --fusion-candidates for each map (examples/fousek) matches fusion/1
  fusion-search/EXAMPLE    polyk-schedule --fusion=search's file for each map matches fusion/1
The last line is `N passed, M failed`; the exit status is 1 when anything failed.

Needs Debian's python3-yaml and python3-jsonschema (4.10 in Debian 12): it uses
jsonschema.RefResolver there, or a referencing.Registry with jsonschema >= 4.18.
"""

import copy
import functools
import os
import pathlib
import posixpath
import re
import subprocess
import sys
import tempfile
import warnings
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import jsonschema
import yaml

KINDS = ["program", "scop", "schedule", "bound", "kernel"]
# Kinds beside the pipeline: space/1 (polyk-tune space writes it from a program; polyk-tune
# generate reads it), tuning/1 (polyk-tune run writes it; polyk-schedule --tuning reads it).
SIDE_KINDS = ["space", "tuning", "partition", "fusion"]
# The polyk tool that reads each kind (kernel/1 has no reader among the stages).
READER = {"program": "polyk-flatten", "scop": "polyk-schedule", "schedule": "polyk-bind", "bound": "polyk-emit"}
TIMEOUT = 120


class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML with the core schema of YAML 1.2 for booleans: only true / false are booleans.

    polyk's reader (yaml-cpp) types scalars on demand and its writer leaves strings such as `on`
    or `yes` (a parameter or tensor name) unquoted; PyYAML's YAML 1.1 rules would turn them
    into booleans. Numbers and null keep PyYAML's rules. (libyaml's parser where PyYAML has it:
    the pure-Python one took 10 of this test's 100 s.)
    """


Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def load_yaml(text):
    return yaml.load(text, Loader=Loader)


def rfc_urljoin(base, ref):
    """urljoin following RFC 3986 for any scheme: urllib's leaves `polyk:a/b` + `c` as `c`."""
    if not base or urlsplit(ref).scheme:
        return ref
    scheme = urlsplit(base).scheme
    if not scheme or scheme in ("http", "https", "file"):
        return urljoin(base, ref)
    doc, _ = urldefrag(base)
    if ref == "" or ref.startswith("#"):
        return doc + ref
    path = doc[len(scheme) + 1:]
    ref_path, frag = (ref.split("#", 1) + [None])[:2]
    merged = posixpath.normpath(posixpath.join(posixpath.dirname(path), ref_path))
    return f"{scheme}:{merged}" + (f"#{frag}" if frag is not None else "")


def undescribed(node, where=""):
    """Places of properties (anywhere in a schema) that have no description. The properties of
    `if` conditions are tests on fields described elsewhere, not definitions."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "if":
                continue
            if key == "properties" and isinstance(value, dict):
                for name, prop in value.items():
                    if isinstance(prop, dict) and "description" not in prop:
                        found.append(f"{where}/{name}")
            found += undescribed(value, f"{where}/{key}" if key != "properties" else where)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += undescribed(value, where)
    return found


def refs(node):
    """Every $ref in a schema."""
    if isinstance(node, dict):
        return ([node["$ref"]] if isinstance(node.get("$ref"), str) else []) + [r for v in node.values() for r in refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in refs(v)]
    return []


class Schemas:
    def __init__(self, src):
        self.dir = pathlib.Path(src) / "schemas"
        self.schemas = {}
        self.problems = {}
        for kind in KINDS + SIDE_KINDS:
            path = self.dir / f"{kind}.schema.yaml"
            try:
                self.schemas[kind] = load_yaml(path.read_text())
            except (OSError, yaml.YAMLError) as e:
                self.problems[kind] = f"cannot read {path}: {e}"
        self.store = {s["$id"]: s for s in self.schemas.values() if isinstance(s, dict) and "$id" in s}
        self.validators = {}

    def check(self, kind):
        """Problems with the schema itself."""
        if kind in self.problems:
            return [self.problems[kind]]
        s = self.schemas[kind]
        out = []
        try:
            jsonschema.Draft202012Validator.check_schema(s)
        except jsonschema.exceptions.SchemaError as e:
            out.append(f"not a valid draft 2020-12 schema: {e.message}")
        want = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"polyk:schemas/{kind}.schema.yaml",
            "type": "object",
        }
        for key, value in want.items():
            if s.get(key) != value:
                out.append(f"{key} is {s.get(key)!r}, expected {value!r}")
        for key in ("title", "description", "required", "properties"):
            if key not in s:
                out.append(f"no {key}")
        if s.get("properties", {}).get("polyk", {}).get("const") != f"{kind}/1":
            out.append(f"properties.polyk is not `const: {kind}/1`")
        if s.get("additionalProperties") is not False:
            out.append("top level lacks additionalProperties: false")
        out += [f"property {where} has no description" for where in undescribed(s)]
        out += [f"$ref {ref} does not resolve" for ref in refs(s) if self.resolve(s["$id"], ref) is None]
        return out

    def resolve(self, base, ref):
        """The subschema `ref` names (relative to `base`), or None."""
        doc, frag = urldefrag(rfc_urljoin(base, ref))
        node = self.store.get(doc)
        for part in filter(None, unquote(frag).split("/")):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def validator(self, kind):
        if kind not in self.validators:
            schema = self.schemas[kind]
            try:
                import referencing  # jsonschema >= 4.18
                from referencing.jsonschema import DRAFT202012

                # referencing joins with urllib's urljoin, which resolves a sibling `x.schema.yaml`
                # against `polyk:schemas/...` to the bare name: register both names.
                resources = []
                for uri, s in self.store.items():
                    res = DRAFT202012.create_resource(s)
                    resources += [(uri, res), (uri.rsplit("/", 1)[-1], res)]
                registry = referencing.Registry().with_resources(resources)
                v = jsonschema.Draft202012Validator(schema, registry=registry)
            except (ImportError, TypeError):  # jsonschema 4.10 (Debian 12): RefResolver, RFC 3986 joins
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    resolver = jsonschema.RefResolver(
                        base_uri=schema["$id"], referrer=schema, store=dict(self.store),
                        urljoin_cache=functools.lru_cache(1024)(rfc_urljoin))
                v = jsonschema.Draft202012Validator(schema, resolver=resolver)
            self.validators[kind] = v
        return self.validators[kind]

    def errors(self, kind, doc):
        errs = sorted(self.validator(kind).iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
        return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errs]


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def ok(self, name):
        self.passed += 1
        print(f"ok   {name}")

    def fail(self, name, why):
        self.failed += 1
        print(f"FAIL {name}: {why}")

    def check(self, name, problems):
        if problems:
            self.fail(name, "; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""))
        else:
            self.ok(name)
        return not problems


def run_tool(bin_dir, tool, args):
    exe = os.path.join(bin_dir, tool)
    try:
        p = subprocess.run([exe] + args, capture_output=True, text=True, timeout=TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 127, str(e)
    return p.returncode, p.stderr.strip()


def tool_args(kind, inp, tmp, stem):
    """Arguments running READER[kind] on `inp`, and the file of the next kind it writes."""
    if kind == "bound":
        out = os.path.join(tmp, f"{stem}.kernel.yaml")
        return [inp, "-o", os.path.join(tmp, f"{stem}.cu"), "--kernel-info", out], out
    out = os.path.join(tmp, f"{stem}.{KINDS[KINDS.index(kind) + 1]}.yaml")
    return [inp, "-o", out], out


def check_file(results, schemas, name, kind, path):
    try:
        doc = load_yaml(pathlib.Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        results.fail(name, f"cannot read {path}: {e}")
        return False
    return results.check(name, schemas.errors(kind, doc))


def check_pipeline(results, schemas, bin_dir, program, label, tmp):
    """program/1 -> scop/1 -> schedule/1 -> bound/1 -> CUDA + kernel/1, validating each file."""
    if not check_file(results, schemas, f"pipeline/{label}/program", "program", program):
        return
    path = str(program)
    for kind, nxt in zip(KINDS, KINDS[1:]):
        args, path_next = tool_args(kind, path, tmp, label.replace("/", "_"))
        rc, err = run_tool(bin_dir, READER[kind], args)
        if rc != 0:
            results.fail(f"pipeline/{label}/{nxt}", f"{READER[kind]} exited {rc}: {err.splitlines()[-1] if err else ''}")
            return
        path = path_next
        if not check_file(results, schemas, f"pipeline/{label}/{nxt}", nxt, path):
            return


def negative_cases(ex):
    """(name, kind, document) for documents that must be rejected, made from the examples."""
    cases = []

    def case(name, kind, edit):
        doc = copy.deepcopy(ex[kind])
        edit(doc)
        cases.append((name, kind, doc))

    def stmt(doc, kind):
        return next(s for s in doc["statements"] if s["kind"] == kind)

    def kernel_with_reduction(doc):
        return next(k for k in doc["kernels"] if k["reduce_axis"] != "none")

    case("program-missing-polyk", "program", lambda d: d.pop("polyk"))
    case("program-wrong-version", "program", lambda d: d.update(polyk="program/2"))
    case("program-unknown-dtype", "program", lambda d: next(iter(d["tensors"].values())).update(type="f8"))
    case("program-unknown-role", "program", lambda d: next(iter(d["tensors"].values())).update(role="scratch"))
    case("program-zero-extent", "program", lambda d: next(iter(d["tensors"].values())).update(shape=[0]))
    case("program-no-statements", "program", lambda d: d.update(statements=[]))
    case("program-bad-name", "program", lambda d: d.update(name="3x"))
    case("program-unknown-key", "program", lambda d: d.update(comment="not a key of program/1"))
    case("scop-missing-polyk", "scop", lambda d: d.pop("polyk"))
    case("scop-form-z-reduce", "scop", lambda d: d["statements"][0].update(form="z-reduce"))
    case("scop-unknown-statement-kind", "scop", lambda d: d["statements"][0].update(kind="update"))
    case("scop-reduce-without-op", "scop", lambda d: stmt(d, "reduce").pop("op"))
    case("scop-unknown-op", "scop", lambda d: stmt(d, "reduce").update(op="avg"))
    case("scop-init-without-initialises", "scop", lambda d: stmt(d, "init").pop("initialises"))
    case("scop-dims-not-a-list", "scop", lambda d: d["statements"][0].update(dims="reduced"))
    case("scop-dim-kind", "scop", lambda d: d["statements"][0].update(dims=["serial"]))
    case("scop-missing-recovery", "scop", lambda d: d["statements"][0].pop("recovery"))
    case("scop-unknown-statement-key", "scop", lambda d: d["statements"][0].update(note="x"))
    case("scop-is-not-schedule", "schedule", lambda d: d.update(polyk="scop/1"))
    case("schedule-missing-sizes", "schedule", lambda d: d.pop("sizes"))
    case("schedule-missing-reduction-deps", "schedule", lambda d: d["dependences"].pop("reduction"))
    case("schedule-tree-not-a-string", "schedule", lambda d: d.update(schedule={"domain": "{ S0[i] }"}))
    case("bound-missing-kernels", "bound", lambda d: d.pop("kernels"))
    case("bound-reduce-axis-q", "bound", lambda d: kernel_with_reduction(d).update(reduce_axis="q"))
    case("bound-reduce-block-axis-z", "bound", lambda d: kernel_with_reduction(d).update(reduce_block_axis="z"))
    case("bound-block-two-entries", "bound", lambda d: d["kernels"][0].update(block=[32, 8]))
    case("bound-block-zero", "bound", lambda d: d["kernels"][0].update(block=[0, 1, 1]))
    case("bound-grid-four-entries", "bound", lambda d: d["kernels"][0].update(grid=["1", "1", "1", "1"]))
    case("bound-kernel-missing-promoted", "bound", lambda d: d["kernels"][0].pop("promoted"))
    case("kernel-missing-launcher", "kernel", lambda d: d.pop("launcher"))
    case("bound-header-kernel", "bound", lambda d: d.update(polyk="kernel/1"))
    case("kernel-wrong-header", "kernel", lambda d: d.update(polyk="bound/1"))
    return cases


# Cases the polyk reader accepts although the schema rejects them: keys it ignores, and `dims`
# entries it does not check (polyk-schedule takes anything but "reduced" as parallel).
READER_TOLERATES = {"program-unknown-key", "scop-unknown-statement-key", "scop-dim-kind"}


def check_negatives(results, schemas, bin_dir, ex, tmp):
    for name, kind, doc in negative_cases(ex):
        label = f"reject/{name}"
        if not schemas.errors(kind, doc):
            results.fail(label, f"the {kind} schema accepts it")
            continue
        if kind in READER and name not in READER_TOLERATES:
            path = os.path.join(tmp, f"{name}.yaml")
            pathlib.Path(path).write_text(yaml.safe_dump(doc, sort_keys=False, width=1000))
            rc, err = run_tool(bin_dir, READER[kind], tool_args(kind, path, tmp, name)[0])
            if rc == 0:
                results.fail(label, f"the schema rejects it but {READER[kind]} accepts it")
                continue
        results.ok(label)


def check_spaces(results, schemas, bin_dir, src, programs, tmp):
    """space/1: the example (valid, read by polyk-tune generate), polyk-tune space's output for
    every example program, and broken spaces the schema and polyk-tune generate both reject."""
    path = src / "schemas" / "examples" / "space.example.yaml"
    if check_file(results, schemas, "example/space", "space", path):
        rc, err = run_tool(bin_dir, "polyk-tune", ["generate", str(path)])
        if rc == 0:
            results.ok("example/space/reader")
        else:
            results.fail("example/space/reader", f"polyk-tune generate exited {rc}: {err}")
    for program in programs:
        label = str(program.relative_to(src / "examples").with_suffix(""))
        out = os.path.join(tmp, label.replace("/", "_") + ".space.yaml")
        rc, err = run_tool(bin_dir, "polyk-tune", ["space", str(program), "-o", out])
        if rc != 0:
            results.fail(f"space/{label}", f"polyk-tune space exited {rc}: {err}")
            continue
        check_file(results, schemas, f"space/{label}", "space", out)
    ex = load_yaml(path.read_text())
    broken = {
        "space-missing-parameters": lambda d: d.pop("parameters"),
        "space-values-and-expr": lambda d: d["parameters"][0].update(expr="1"),
        "space-empty-values": lambda d: d["parameters"][0].update(values=[]),
        "space-bad-name": lambda d: d["parameters"][0].update(name="3k"),
        "space-wrong-header": lambda d: d.update(polyk="space/2"),
    }
    for name, edit in broken.items():
        doc = copy.deepcopy(ex)
        edit(doc)
        label = f"reject/{name}"
        if not schemas.errors("space", doc):
            results.fail(label, "the space schema accepts it")
            continue
        f = os.path.join(tmp, f"{name}.yaml")
        pathlib.Path(f).write_text(yaml.safe_dump(doc, sort_keys=False, width=1000))
        rc, err = run_tool(bin_dir, "polyk-tune", ["generate", f])
        if rc == 0:
            results.fail(label, "the schema rejects it but polyk-tune generate accepts it")
        else:
            results.ok(label)


def check_tuning(results, schemas, bin_dir, src, tmp):
    """tuning/1: the example (valid, read by polyk-schedule --tuning), polyk-tune run's output,
    and broken ones the schema and polyk-schedule both reject."""
    path = src / "schemas" / "examples" / "tuning.example.yaml"
    gemm = src / "examples" / "blas" / "gemm.yaml"
    flat = os.path.join(tmp, "gemm.scop.yaml")
    run_tool(bin_dir, "polyk-flatten", [str(gemm), "-o", flat])

    def schedule_reads(f, scop=flat):
        return run_tool(bin_dir, "polyk-schedule", [scop, "--tuning", f, "-o", os.path.join(tmp, "tuned.schedule.yaml")])

    if check_file(results, schemas, "example/tuning", "tuning", path):
        rc, err = schedule_reads(str(path))
        if rc == 0:
            results.ok("example/tuning/reader")
        else:
            results.fail("example/tuning/reader", f"polyk-schedule --tuning exited {rc}: {err}")
    best = os.path.join(tmp, "best.yaml")
    rc, err = run_tool(bin_dir, "polyk-tune", ["run", str(gemm), "--trials", "2", "--log", os.path.join(tmp, "tune.jsonl"),
                                               "--param", "M=33", "--param", "N=65", "--param", "K=17",
                                               "--runtime", str(src / "libcore" / "runtime"), "-o", best])
    if rc != 0:
        results.fail("tuning/run", f"polyk-tune run exited {rc}: {err}")
    else:
        check_file(results, schemas, "tuning/run", "tuning", best)
    ex = load_yaml(path.read_text())
    broken = {
        "tuning-missing-sizes": lambda d: d.pop("sizes"),
        "tuning-wrong-header": lambda d: d.update(polyk="tuning/2"),
        "tuning-other-program": None,  # the schema accepts it; polyk-schedule refuses gemm's tuning for sum_i32
    }
    for name, edit in broken.items():
        label = f"reject/{name}"
        doc = copy.deepcopy(ex)
        if edit is None:
            other = os.path.join(tmp, "sum_i32.scop.yaml")
            run_tool(bin_dir, "polyk-flatten", [str(src / "examples" / "sum_i32.yaml"), "-o", other])
            rc, err = schedule_reads(str(path), other)
            if rc == 0:
                results.fail(label, "polyk-schedule takes a tuning of another program")
            else:
                results.ok(label)
            continue
        edit(doc)
        if not schemas.errors("tuning", doc):
            results.fail(label, "the tuning schema accepts it")
            continue
        f = os.path.join(tmp, f"{name}.yaml")
        pathlib.Path(f).write_text(yaml.safe_dump(doc, sort_keys=False, width=1000))
        rc, err = schedule_reads(f)
        if rc == 0:
            results.fail(label, "the schema rejects it but polyk-schedule --tuning accepts it")
        else:
            results.ok(label)


def check_partitions(results, schemas, bin_dir, src, programs, tmp):
    """partition/1: the example (valid, read back by polyk-partition --check), polyk-partition's
    output for every example's bound file (left by check_pipeline), and broken files the schema
    and polyk-partition --check both reject."""
    path = src / "schemas" / "examples" / "partition.example.yaml"
    if check_file(results, schemas, "example/partition", "partition", path):
        rc, err = run_tool(bin_dir, "polyk-partition", ["--check", str(path), "-o", os.path.join(tmp, "check.partition.yaml")])
        if rc == 0:
            results.ok("example/partition/reader")
        else:
            results.fail("example/partition/reader", f"polyk-partition --check exited {rc}: {err}")
    for program in programs:
        label = str(program.relative_to(src / "examples").with_suffix(""))
        bound = os.path.join(tmp, label.replace("/", "_") + ".bound.yaml")
        if not os.path.exists(bound):
            continue  # (its pipeline failed, reported there)
        out = os.path.join(tmp, label.replace("/", "_") + ".partition.yaml")
        if "-> time[" in pathlib.Path(bound).read_text():
            # A time-tiled program is partitioned one step a launch (polyk-partition refuses it:
            # lit emit-time-tiles); the stages again with --time-tile=0.
            stem = os.path.join(tmp, label.replace("/", "_") + ".steps")
            rc, err = run_tool(bin_dir, "polyk-flatten", [str(program), "-o", stem + ".scop.yaml"])
            if rc == 0:
                rc, err = run_tool(bin_dir, "polyk-schedule", [stem + ".scop.yaml", "--time-tile=0", "-o", stem + ".schedule.yaml"])
            if rc == 0:
                rc, err = run_tool(bin_dir, "polyk-bind", [stem + ".schedule.yaml", "-o", stem + ".bound.yaml"])
            if rc != 0:
                results.fail(f"partition/{label}", f"the stages with --time-tile=0 exited {rc}: {err}")
                continue
            bound = stem + ".bound.yaml"
        rc, err = run_tool(bin_dir, "polyk-partition", [bound, "-o", out])
        if rc != 0:
            results.fail(f"partition/{label}", f"polyk-partition exited {rc}: {err}")
            continue
        check_file(results, schemas, f"partition/{label}", "partition", out)
    example = load_yaml(path.read_text())
    broken = {
        "partition-wrong-header": lambda d: d.update(polyk="partition/2"),
        "partition-missing-kernels": lambda d: d.pop("kernels"),
        "partition-bad-kind": lambda d: d["kernels"][0]["accesses"][0].update(kind="update"),
    }
    for name, edit in broken.items():
        doc = copy.deepcopy(example)
        edit(doc)
        label = f"reject/{name}"
        if not schemas.errors("partition", doc):
            results.fail(label, "the partition schema accepts it")
            continue
        f = os.path.join(tmp, name + ".yaml")
        pathlib.Path(f).write_text(yaml.safe_dump(doc, sort_keys=False))
        rc, _ = run_tool(bin_dir, "polyk-partition", ["--check", f, "-o", os.path.join(tmp, name + ".out.yaml")])
        if rc != 1:
            results.fail(label, f"polyk-partition --check exited {rc}, not 1")
        else:
            results.ok(label)


def check_fusion(results, schemas, bin_dir, src, tmp):
    """fusion/1: the example, polyk-schedule --fusion-candidates's output for each map, and broken
    documents the schema rejects (nothing reads the kind back yet)."""
    path = src / "schemas" / "examples" / "fusion.example.yaml"
    check_file(results, schemas, "example/fusion", "fusion", path)
    for program in sorted((src / "examples" / "fousek").glob("*.yaml")):
        label = program.stem
        scop = os.path.join(tmp, f"{label}.fusion.scop.yaml")
        out = os.path.join(tmp, f"{label}.fusion.yaml")
        rc, err = run_tool(bin_dir, "polyk-flatten", [str(program), "-o", scop])
        if rc == 0:
            rc, err = run_tool(bin_dir, "polyk-schedule", [scop, "--fusion-candidates", out, "-o", os.devnull])
        if rc != 0:
            results.fail(f"fusion/{label}", f"exited {rc}: {err}")
            continue
        check_file(results, schemas, f"fusion/{label}", "fusion", out)
        # The search's file (--fusion=search, with the H100's routines).
        searched = os.path.join(tmp, f"{label}.search.yaml")
        rc, err = run_tool(bin_dir, "polyk-schedule", [scop, "--fusion=search", "--psi", str(src / "bench" / "map" / "psi-h100.yaml"),
                                                       "--fusion-candidates", searched, "-o", os.devnull])
        if rc != 0:
            results.fail(f"fusion-search/{label}", f"exited {rc}: {err}")
            continue
        check_file(results, schemas, f"fusion-search/{label}", "fusion", searched)
    ex = load_yaml(path.read_text())
    broken = {
        "fusion-missing-candidates": lambda d: d.pop("candidates"),
        "fusion-bad-function-name": lambda d: d["functions"][0].update(name="g0"),
        "fusion-short-edge": lambda d: d["edges"][0].pop(),
        "fusion-wrong-header": lambda d: d.update(polyk="fusion/2"),
    }
    for name, edit in broken.items():
        doc = copy.deepcopy(ex)
        edit(doc)
        if schemas.errors("fusion", doc):
            results.ok(f"reject/{name}")
        else:
            results.fail(f"reject/{name}", "the fusion schema accepts it")


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    bin_dir, src = argv[1], pathlib.Path(argv[2])
    results = Results()
    schemas = Schemas(src)

    for kind in KINDS + SIDE_KINDS:
        results.check(f"schema/{kind}", schemas.check(kind))
    if results.failed:
        print(f"{results.passed} passed, {results.failed} failed")
        return 1

    with tempfile.TemporaryDirectory(prefix="polyk-schemas-") as tmp:
        # The examples beside the schemas: valid, and accepted by the tool that reads them.
        ex = {}
        for kind in KINDS:
            path = src / "schemas" / "examples" / f"{kind}.example.yaml"
            if check_file(results, schemas, f"example/{kind}", kind, path):
                ex[kind] = load_yaml(path.read_text())
                if kind in READER:
                    rc, err = run_tool(bin_dir, READER[kind], tool_args(kind, str(path), tmp, f"example-{kind}")[0])
                    if rc == 0:
                        results.ok(f"example/{kind}/reader")
                    else:
                        results.fail(f"example/{kind}/reader", f"{READER[kind]} exited {rc}: {err}")

        programs = sorted((src / "examples").rglob("*.yaml"))
        if not programs:
            results.fail("pipeline", f"no programs under {src / 'examples'}")
        for program in programs:
            label = str(program.relative_to(src / "examples").with_suffix(""))
            check_pipeline(results, schemas, bin_dir, program, label, tmp)

        if len(ex) == len(KINDS):
            check_negatives(results, schemas, bin_dir, ex, tmp)
        else:
            results.fail("reject", "needs every example file to be valid")

        check_spaces(results, schemas, bin_dir, src, programs, tmp)
        check_tuning(results, schemas, bin_dir, src, tmp)
        check_partitions(results, schemas, bin_dir, src, programs, tmp)
        check_fusion(results, schemas, bin_dir, src, tmp)

    print(f"{results.passed} passed, {results.failed} failed")
    return 1 if results.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
