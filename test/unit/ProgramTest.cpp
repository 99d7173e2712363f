// program/1: the reader's checks (with positions) and the writer's round trip.
#include "polyk/Program.h"

#include <gtest/gtest.h>

using namespace polyk;

namespace {
const char *kSg7 = R"(polyk: program/1
name: sg7
params: {B: 64}
tensors:
  x:   {type: f32, shape: [B, 128, 768], role: input}
  t:   {type: f32, shape: [B, 128, 768], role: temporary}
  out: {type: f32, shape: [768], role: output}
statements:
  - t(b, s, h) = (x(b, s, h) + 1.0) * x(b, s, h)
  - out(h) +=! t(b, s, h)
)";

InputError errorOf(const std::string &text) {
  try {
    readProgram(text, "p.yaml");
  } catch (const InputError &e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return InputError({}, "");
}
} // namespace

TEST(Program, ReadsLoopNestsAndReducedDims) {
  Program p = readProgram(kSg7, "sg7.yaml");
  ASSERT_EQ(p.statements.size(), 2u);
  const auto &r = p.statements[1];
  EXPECT_EQ(r.iterators, (std::vector<std::string>{"b", "s", "h"}));
  EXPECT_EQ(r.reduced, (std::vector<bool>{true, true, false}));
  EXPECT_EQ(r.extents[0].value, 64);
  EXPECT_EQ(r.extents[0].param, "B");
}

TEST(Program, WriterRoundTrips) {
  Program p = readProgram(kSg7, "sg7.yaml");
  std::string once = writeProgram(p);
  std::string twice = writeProgram(readProgram(once, "again.yaml"));
  EXPECT_EQ(once, twice);
}

TEST(Program, UnknownTensorIsReportedAtItsColumn) {
  std::string text = kSg7;
  text.replace(text.find("x(b, s, h) + 1.0"), 1, "q");
  InputError e = errorOf(text);
  EXPECT_EQ(e.loc().line, 9);
  EXPECT_EQ(e.loc().col, 19);
  EXPECT_NE(std::string(e.what()).find("unknown tensor 'q'"), std::string::npos);
}

TEST(Program, IndexWithTwoExtentsIsRejected) {
  std::string text = kSg7;
  text.replace(text.find("shape: [768]"), 12, "shape: [512]");
  InputError e = errorOf(text);
  EXPECT_NE(std::string(e.what()).find("two different extents"), std::string::npos);
  EXPECT_EQ(e.loc().line, 10);
}

TEST(Program, ReductionWithoutReducedIndexIsRejected) {
  InputError e = errorOf("polyk: program/1\nname: p\ntensors:\n  x: {type: f32, shape: [4], role: input}\n"
                         "  y: {type: f32, shape: [4], role: output}\nstatements:\n  - y(i) +=! x(i)\n");
  EXPECT_NE(std::string(e.what()).find("no reduced index"), std::string::npos);
  EXPECT_EQ(e.loc().line, 7);
  EXPECT_EQ(e.loc().col, 5);
}

TEST(Program, WrongKindAndVersion) {
  EXPECT_NE(std::string(errorOf("polyk: scop/1\nname: p\n").what()).find("expected a 'program/1' file"), std::string::npos);
  EXPECT_NE(std::string(errorOf("polyk: program/2\nname: p\n").what()).find("unsupported version"), std::string::npos);
}

TEST(Program, MalformedYamlHasAPosition) {
  InputError e = errorOf("polyk: program/1\nname: [unclosed\n");
  EXPECT_GT(e.loc().line, 0);
  EXPECT_NE(std::string(e.what()).find("malformed YAML"), std::string::npos);
}
