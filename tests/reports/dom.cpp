#include "dom.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <set>
#include <sstream>
#include <stdexcept>

namespace qc::test {
namespace {

void append_utf8(std::string& o, std::uint32_t cp) {
  if (cp < 0x80) {
    o += static_cast<char>(cp);
  } else if (cp < 0x800) {
    o += static_cast<char>(0xC0 | (cp >> 6));
    o += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    o += static_cast<char>(0xE0 | (cp >> 12));
    o += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    o += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    o += static_cast<char>(0xF0 | (cp >> 18));
    o += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    o += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    o += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The entities Chromium's serializer writes, and numeric references.
std::string decode(std::string_view s) {
  std::string o;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      o += s[i];
      continue;
    }
    const std::size_t semi = s.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) {
      o += '&';
      continue;
    }
    const std::string_view ent = s.substr(i + 1, semi - i - 1);
    if (ent == "amp")
      o += '&';
    else if (ent == "lt")
      o += '<';
    else if (ent == "gt")
      o += '>';
    else if (ent == "quot")
      o += '"';
    else if (ent == "apos")
      o += '\'';
    else if (ent == "nbsp")
      append_utf8(o, 0xA0);
    else if (!ent.empty() && ent[0] == '#')
      append_utf8(o, static_cast<std::uint32_t>(ent.size() > 1 && (ent[1] == 'x' || ent[1] == 'X')
                                                    ? std::stoul(std::string(ent.substr(2)), nullptr, 16)
                                                    : std::stoul(std::string(ent.substr(1)))));
    else {
      o += '&';
      continue;
    }
    i = semi;
  }
  return o;
}

const std::set<std::string> kVoid = {"area",  "base", "br",   "col",   "embed",  "hr",    "img",
                                     "input", "link", "meta", "param", "source", "track", "wbr"};

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  std::unique_ptr<Node> run() {
    auto root = std::make_unique<Node>();
    root->tag = "#document";
    Node* cur = root.get();
    while (p_ < s_.size()) {
      if (s_[p_] != '<') {
        const std::size_t e = std::min(s_.find('<', p_), s_.size());
        add_text(cur, decode(std::string_view(s_).substr(p_, e - p_)));
        p_ = e;
      } else if (s_.compare(p_, 4, "<!--") == 0) {
        p_ = skip_past("-->");
      } else if (s_.compare(p_, 2, "<!") == 0) {
        p_ = skip_past(">");
      } else if (s_.compare(p_, 2, "</") == 0) {
        const std::size_t e = s_.find('>', p_);
        if (e == std::string::npos) throw std::runtime_error("unterminated end tag");
        std::string tag = lower(s_.substr(p_ + 2, e - p_ - 2));
        p_ = e + 1;
        for (Node* n = cur; n && n->parent; n = n->parent)  // close up to the matching element
          if (n->tag == tag) {
            cur = n->parent;
            break;
          }
      } else {
        cur = start_tag(cur);
      }
    }
    return root;
  }

 private:
  static std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  }

  std::size_t skip_past(const char* end) {
    const std::size_t e = s_.find(end, p_);
    return e == std::string::npos ? s_.size() : e + std::char_traits<char>::length(end);
  }

  static void add_text(Node* parent, std::string text) {
    auto n = std::make_unique<Node>();
    n->text = std::move(text);
    n->parent = parent;
    parent->children.push_back(std::move(n));
  }

  void skip_space() {
    while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_]))) ++p_;
  }

  Node* start_tag(Node* cur) {
    ++p_;
    std::size_t b = p_;
    while (p_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[p_])) && s_[p_] != '>' && s_[p_] != '/') ++p_;
    auto n = std::make_unique<Node>();
    n->tag = lower(s_.substr(b, p_ - b));
    n->parent = cur;
    bool self_closing = false;
    for (;;) {
      skip_space();
      if (p_ >= s_.size()) throw std::runtime_error("unterminated start tag");
      if (s_[p_] == '>') {
        ++p_;
        break;
      }
      if (s_[p_] == '/') {
        self_closing = true;
        ++p_;
        continue;
      }
      b = p_;
      while (p_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[p_])) && s_[p_] != '=' && s_[p_] != '>' &&
             s_[p_] != '/')
        ++p_;
      std::string attr = lower(s_.substr(b, p_ - b));
      std::string value;
      skip_space();
      if (p_ < s_.size() && s_[p_] == '=') {
        ++p_;
        skip_space();
        if (p_ < s_.size() && (s_[p_] == '"' || s_[p_] == '\'')) {
          const char q = s_[p_++];
          const std::size_t e = s_.find(q, p_);
          if (e == std::string::npos) throw std::runtime_error("unterminated attribute value");
          value = decode(std::string_view(s_).substr(p_, e - p_));
          p_ = e + 1;
        } else {
          b = p_;
          while (p_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[p_])) && s_[p_] != '>') ++p_;
          value = decode(std::string_view(s_).substr(b, p_ - b));
        }
      }
      n->attributes.emplace_back(std::move(attr), std::move(value));
    }
    Node* node = n.get();
    cur->children.push_back(std::move(n));
    if (node->tag == "script" || node->tag == "style") {  // raw text up to the end tag
      const std::string end = "</" + node->tag;
      const std::size_t e = std::min(s_.find(end, p_), s_.size());
      add_text(node, s_.substr(p_, e - p_));
      p_ = skip_past(">");
      return cur;
    }
    return self_closing || kVoid.count(node->tag) ? cur : node;
  }

  const std::string& s_;
  std::size_t p_ = 0;
};

void collect(const Node& n, const std::string& tag, std::vector<const Node*>& out) {
  for (const auto& c : n.children) {
    if (!c->is_element()) continue;
    if (tag.empty() || c->tag == tag) out.push_back(c.get());
    collect(*c, tag, out);
  }
}

}  // namespace

const std::string* Node::attribute(const std::string& name) const {
  for (const auto& [k, v] : attributes)
    if (k == name) return &v;
  return nullptr;
}

bool Node::has_class(const std::string& cls) const {
  const std::string* c = attribute("class");
  if (!c) return false;
  std::istringstream in(*c);
  std::string w;
  while (in >> w)
    if (w == cls) return true;
  return false;
}

std::string Node::text_content() const {
  if (!is_element()) return text;
  std::string o;
  for (const auto& c : children) o += c->text_content();
  return o;
}

std::vector<const Node*> Node::elements(const std::string& tag) const {
  std::vector<const Node*> out;
  collect(*this, tag, out);
  return out;
}

const Node* Node::find_id(const std::string& id) const {
  for (const Node* n : elements())
    if (const std::string* v = n->attribute("id"); v && *v == id) return n;
  return nullptr;
}

std::unique_ptr<Node> parse_dom(const std::string& html) { return Parser(html).run(); }

}  // namespace qc::test
