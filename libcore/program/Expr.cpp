// Recursive-descent parser and printer of the statement language (see Expr.h). Precedence, low to
// high: `||`, `&&`, comparisons, `+ -`, `* / %`, unary `- !`, calls / accesses / literals.
#include "polyk/Expr.h"

#include <cctype>
#include <set>

namespace polyk {

namespace {

struct Token {
  enum Kind { Ident, Number, Op, End } kind;
  std::string text;
  int offset;
};

class Lexer {
public:
  explicit Lexer(const std::string &s) : s_(s) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    size_t i = 0;
    while (true) {
      while (i < s_.size() && std::isspace((unsigned char)s_[i])) ++i;
      if (i >= s_.size() || s_[i] == '#') break;
      int start = (int)i;
      char c = s_[i];
      if (std::isalpha((unsigned char)c) || c == '_') {
        while (i < s_.size() && (std::isalnum((unsigned char)s_[i]) || s_[i] == '_')) ++i;
        out.push_back({Token::Ident, s_.substr(start, i - start), start});
        // `max=!` / `min=!` are assignment operators spelled with a name.
        std::string w = out.back().text;
        if ((w == "max" || w == "min") && i < s_.size() && s_[i] == '=' && (i + 1 >= s_.size() || s_[i + 1] != '=')) {
          ++i;
          out.back() = {Token::Op, w + "=", start};
        }
        continue;
      }
      if (std::isdigit((unsigned char)c) || (c == '.' && i + 1 < s_.size() && std::isdigit((unsigned char)s_[i + 1]))) {
        while (i < s_.size() && (std::isdigit((unsigned char)s_[i]) || s_[i] == '.')) ++i;
        if (i < s_.size() && (s_[i] == 'e' || s_[i] == 'E')) {
          size_t j = i + 1;
          if (j < s_.size() && (s_[j] == '+' || s_[j] == '-')) ++j;
          if (j < s_.size() && std::isdigit((unsigned char)s_[j])) {
            i = j;
            while (i < s_.size() && std::isdigit((unsigned char)s_[i])) ++i;
          }
        }
        out.push_back({Token::Number, s_.substr(start, i - start), start});
        continue;
      }
      static const char *ops[] = {"+=", "*=", "&&=", "||=", "==", "!=", "<=", ">=", "&&", "||",
                                  "+",  "-",  "*",   "/",   "%",  "<",  ">",  "=",  "!",  "(",
                                  ")",  ","};
      bool matched = false;
      for (const char *op : ops) {
        std::string o = op;
        if (s_.compare(i, o.size(), o) == 0) {
          out.push_back({Token::Op, o, start});
          i += o.size();
          matched = true;
          break;
        }
      }
      if (!matched) throw ParseError{start, std::string("unexpected character '") + c + "'"};
    }
    out.push_back({Token::End, "", (int)s_.size()});
    return out;
  }

private:
  const std::string &s_;
};

class Parser {
public:
  explicit Parser(const std::string &s) : toks_(Lexer(s).run()) {}

  Statement statement() {
    Statement st;
    const Token &t = peek();
    if (t.kind != Token::Ident) throw ParseError{t.offset, "expected a tensor access on the left-hand side"};
    next();
    st.lhs = accessAfterName(t);
    const Token &op = peek();
    static const std::set<std::string> assigns = {"=", "+=", "*=", "max=", "min=", "&&=", "||="};
    if (op.kind != Token::Op || !assigns.count(op.text))
      throw ParseError{op.offset, "expected '=' or a reduction such as '+=!'"};
    next();
    st.assignOp = op.text;
    if (peek().kind == Token::Op && peek().text == "!" && st.assignOp != "=") {
      next();
      st.freshlyInitialised = true;
    }
    st.rhs = expr();
    expectEnd();
    return st;
  }

  ExprPtr wholeExpr() {
    ExprPtr e = expr();
    expectEnd();
    return e;
  }

private:
  const Token &peek() const { return toks_[pos_]; }
  const Token &next() { return toks_[pos_++]; }
  bool accept(const std::string &op) {
    if (peek().kind == Token::Op && peek().text == op) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(const std::string &op) {
    if (!accept(op)) throw ParseError{peek().offset, "expected '" + op + "'" + found()};
  }
  void expectEnd() {
    if (peek().kind != Token::End) throw ParseError{peek().offset, "unexpected '" + peek().text + "'"};
  }
  std::string found() const {
    return peek().kind == Token::End ? " at end of statement" : ", found '" + peek().text + "'";
  }

  Access accessAfterName(const Token &name) {
    Access a;
    a.tensor = name.text;
    a.offset = name.offset;
    expect("(");
    if (!accept(")")) {
      do {
        const Token &ix = peek();
        if (ix.kind != Token::Ident) throw ParseError{ix.offset, "index expressions must be plain index names"};
        next();
        a.indices.push_back(ix.text);
        a.indexOffsets.push_back(ix.offset);
      } while (accept(","));
      if (peek().kind == Token::Op && peek().text != ")" && peek().text != ",")
        throw ParseError{peek().offset, "index expressions must be plain index names"};
      expect(")");
    }
    return a;
  }

  /// Expressions nest at most this deep, chains of binary operators included: the parser, the
  /// printers and the destructors recurse over the tree.
  static constexpr int kMaxDepth = 200;

  /// Counts one level of nesting for the scope of a parse function.
  struct Nest {
    Parser &p;
    Nest(Parser &parser, int offset) : p(parser) {
      ++p.depth_;
      if (p.depth_ > kMaxDepth) throw ParseError{offset, "expression nested too deeply (at most " + std::to_string(kMaxDepth) + " levels)"};
    }
    ~Nest() { --p.depth_; }
  };

  ExprPtr binary(std::vector<std::string> ops, ExprPtr (Parser::*sub)()) {
    Nest nest(*this, peek().offset);
    ExprPtr lhs = (this->*sub)();
    int chain = 0;
    while (true) {
      const Token &t = peek();
      bool found = false;
      for (const auto &o : ops)
        if (t.kind == Token::Op && t.text == o) found = true;
      if (!found) return lhs;
      if (depth_ + ++chain > kMaxDepth)
        throw ParseError{t.offset, "expression nested too deeply (at most " + std::to_string(kMaxDepth) + " levels)"};
      next();
      auto e = std::make_shared<Expr>();
      e->kind = Expr::Kind::Binary;
      e->text = t.text;
      e->offset = t.offset;
      e->args = {lhs, (this->*sub)()};
      lhs = e;
    }
  }

  ExprPtr expr() { return binary({"||"}, &Parser::andExpr); }
  ExprPtr andExpr() { return binary({"&&"}, &Parser::cmpExpr); }
  ExprPtr cmpExpr() { return binary({"==", "!=", "<=", ">=", "<", ">"}, &Parser::addExpr); }
  ExprPtr addExpr() { return binary({"+", "-"}, &Parser::mulExpr); }
  ExprPtr mulExpr() { return binary({"*", "/", "%"}, &Parser::unary); }

  ExprPtr unary() {
    const Token &t = peek();
    if (t.kind == Token::Op && (t.text == "-" || t.text == "!")) {
      Nest nest(*this, t.offset);
      next();
      auto e = std::make_shared<Expr>();
      e->kind = Expr::Kind::Unary;
      e->text = t.text;
      e->offset = t.offset;
      e->args = {unary()};
      return e;
    }
    return primary();
  }

  ExprPtr primary() {
    const Token &t = peek();
    if (t.kind == Token::Number) {
      next();
      auto e = std::make_shared<Expr>();
      e->kind = Expr::Kind::Number;
      e->text = t.text;
      e->offset = t.offset;
      e->isFloatLiteral = t.text.find_first_of(".eE") != std::string::npos;
      return e;
    }
    if (t.kind == Token::Op && t.text == "(") {
      next();
      ExprPtr e = expr();
      expect(")");
      return e;
    }
    if (t.kind == Token::Ident) {
      next();
      if (!(peek().kind == Token::Op && peek().text == "("))
        throw ParseError{t.offset, "'" + t.text + "' is not a tensor access or a function call"};
      // Functions and casts take expressions; anything else names a tensor.
      bool isFunction = isKnownFunction(t.text, 0) || parseDType(t.text).has_value();
      auto e = std::make_shared<Expr>();
      e->offset = t.offset;
      if (!isFunction) {
        e->kind = Expr::Kind::Access;
        e->access = accessAfterName(t);
        return e;
      }
      next(); // (
      e->kind = t.text == "select" ? Expr::Kind::Select : Expr::Kind::Call;
      e->text = t.text;
      if (!accept(")")) {
        do e->args.push_back(expr());
        while (accept(","));
        expect(")");
      }
      bool cast = parseDType(t.text).has_value();
      if ((cast && e->args.size() != 1) || (!cast && !isKnownFunction(t.text, e->args.size())))
        throw ParseError{t.offset, "wrong number of arguments to '" + t.text + "'"};
      return e;
    }
    throw ParseError{t.offset, "expected an expression" + found()};
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

} // namespace

bool isKnownFunction(const std::string &n, size_t arity) {
  static const std::set<std::string> unary = {"exp", "log", "sqrt", "rsqrt", "abs", "tanh", "sigmoid", "relu"};
  static const std::set<std::string> binaryFns = {"max", "min", "pow"};
  if (arity == 0) return unary.count(n) || binaryFns.count(n) || n == "select";
  if (unary.count(n)) return arity == 1;
  if (binaryFns.count(n)) return arity == 2;
  if (n == "select") return arity == 3;
  return false;
}

Statement parseStatement(const std::string &text) { return Parser(text).statement(); }
ExprPtr parseExpr(const std::string &text) { return Parser(text).wholeExpr(); }

void collectAccesses(const ExprPtr &e, std::vector<const Access *> &out) {
  if (e->kind == Expr::Kind::Access) out.push_back(&e->access);
  for (const auto &a : e->args) collectAccesses(a, out);
}

static std::string printAccess(const Access &a) {
  std::string s = a.tensor + "(";
  for (size_t i = 0; i < a.indices.size(); ++i) s += (i ? ", " : "") + a.indices[i];
  return s + ")";
}

std::string printExpr(const ExprPtr &e) {
  switch (e->kind) {
  case Expr::Kind::Number: return e->text;
  case Expr::Kind::Access: return printAccess(e->access);
  case Expr::Kind::Unary: return e->text + printExpr(e->args[0]);
  case Expr::Kind::Binary: return "(" + printExpr(e->args[0]) + " " + e->text + " " + printExpr(e->args[1]) + ")";
  case Expr::Kind::Call:
  case Expr::Kind::Select: {
    std::string s = e->text + "(";
    for (size_t i = 0; i < e->args.size(); ++i) s += (i ? ", " : "") + printExpr(e->args[i]);
    return s + ")";
  }
  }
  return "";
}

std::string printStatement(const Statement &s) {
  return printAccess(s.lhs) + " " + s.assignOp + (s.freshlyInitialised ? "!" : "") + " " + printExpr(s.rhs);
}

} // namespace polyk
