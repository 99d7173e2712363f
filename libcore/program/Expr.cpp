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
  explicit Parser(const std::string &s) : text_(s), toks_(Lexer(s).run()) {}

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
    if (peek().kind == Token::Ident && peek().text == "where") {
      next();
      size_t start = peek().offset;
      whereClause(st);
      st.whereText = text_.substr(start, peek().offset - start);
      while (!st.whereText.empty() && std::isspace((unsigned char)st.whereText.back())) st.whereText.pop_back();
    }
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
        a.indexOffsets.push_back(peek().offset);
        a.subscripts.push_back(affine("subscript"));
        a.indices.push_back(a.subscripts.back().str());
      } while (accept(","));
      expect(")");
    }
    return a;
  }

  /// An affine expression: terms `c`, `name`, `c*name`, `name*c` joined by + and -, each with an
  /// optional leading sign. Anything else (a product of names, a division, a call) is not affine.
  Affine affine(const std::string &what) {
    Affine f;
    auto add = [&](const std::string &name, long long c) {
      for (auto &[n, k] : f.terms)
        if (n == name) {
          k += c;
          return;
        }
      f.terms.push_back({name, c});
    };
    auto number = [&](const Token &t) {
      if (t.text.find_first_not_of("0123456789") != std::string::npos || t.text.size() > 12)
        throw ParseError{t.offset, "non-affine " + what + ": '" + t.text + "' is not an integer (at most 12 digits)"};
      return std::stoll(t.text);
    };
    long long sign = 1;
    bool first = true;
    while (true) {
      if (!first || peek().kind == Token::Op) {
        if (accept("+")) sign = 1;
        else if (accept("-")) sign = -1;
        else if (!first) break;
      }
      first = false;
      const Token &t = peek();
      if (t.kind == Token::Number) {
        next();
        long long c = sign * number(t);
        if (accept("*")) {
          const Token &n = peek();
          if (n.kind != Token::Ident) throw ParseError{n.offset, "non-affine " + what + ": expected an index name after '*'"};
          next();
          add(n.text, c);
        } else {
          f.constant += c;
        }
      } else if (t.kind == Token::Ident) {
        next();
        if (peek().kind == Token::Op && peek().text == "(")
          throw ParseError{t.offset, "non-affine " + what + ": '" + t.text + "(...)' (a subscript takes indices, parameters and integers)"};
        long long c = sign;
        if (accept("*")) {
          const Token &n = peek();
          if (n.kind == Token::Ident)
            throw ParseError{n.offset, "non-affine " + what + ": '" + t.text + " * " + n.text + "' multiplies two names"};
          if (n.kind != Token::Number) throw ParseError{n.offset, "non-affine " + what + ": expected an integer after '*'"};
          next();
          c *= number(n);
        }
        add(t.text, c);
      } else {
        throw ParseError{t.offset, "expected an index, a parameter or an integer in a " + what + found()};
      }
      const Token &after = peek();
      if (after.kind == Token::Op && (after.text == "/" || after.text == "%"))
        throw ParseError{after.offset, "non-affine " + what + ": '" + after.text + "' (division and remainder are not affine)"};
      if (after.kind == Token::Op && after.text == "*")
        throw ParseError{after.offset, "non-affine " + what + ": a product with more than one name or integer"};
      if (after.kind == Token::Op && after.text == "(")
        throw ParseError{after.offset, "non-affine " + what + ": parentheses are not supported in subscripts"};
    }
    std::erase_if(f.terms, [](const auto &t) { return t.second == 0; });
    return f;
  }

  /// `where 1 <= i < N - 1, 1 <= j < M - 1`: comparison chains of affine expressions.
  void whereClause(Statement &st) {
    static const std::set<std::string> cmps = {"<", "<=", ">", ">=", "=="};
    do {
      Affine lhs = affine("bound");
      bool any = false;
      while (peek().kind == Token::Op && cmps.count(peek().text)) {
        Constraint c;
        c.offset = peek().offset;
        c.op = next().text;
        c.lhs = lhs;
        c.rhs = affine("bound");
        lhs = c.rhs;
        st.where.push_back(c);
        any = true;
      }
      if (!any) throw ParseError{peek().offset, "expected a comparison (<, <=, >, >=, ==) in 'where'" + found()};
    } while (accept(","));
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

  const std::string &text_;
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
  return printAccess(s.lhs) + " " + s.assignOp + (s.freshlyInitialised ? "!" : "") + " " + printExpr(s.rhs) +
         (s.where.empty() ? "" : " where " + s.whereText);
}

void Access::setPlain(const std::vector<std::string> &names) {
  indices = names;
  subscripts.clear();
  for (const auto &n : names) subscripts.push_back(Affine{{{n, 1}}, 0});
}

std::string Affine::str() const {
  std::string s;
  for (const auto &[name, c] : terms) {
    long long m = c < 0 ? -c : c;
    std::string term = (m == 1 ? "" : std::to_string(m) + "*") + name;
    s += s.empty() ? (c < 0 ? "-" : "") + term : (c < 0 ? " - " : " + ") + term;
  }
  if (constant != 0 || s.empty()) {
    long long m = constant < 0 ? -constant : constant;
    s += s.empty() ? std::to_string(constant) : (constant < 0 ? " - " : " + ") + std::to_string(m);
  }
  return s;
}

} // namespace polyk
