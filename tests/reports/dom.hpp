// A small reader for the DOM that `chromium --dump-dom` prints, so tests can query what the
// browser built rather than the text the renderer wrote. It relies on Chromium's serialization
// (every attribute double-quoted, every non-void element closed, text entity-escaped); it is not
// a general HTML parser.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace qc::test {

struct Node {
  std::string tag;                                              // lower case; empty for a text node
  std::string text;                                             // a text node's decoded text
  std::vector<std::pair<std::string, std::string>> attributes;  // decoded values, in order
  std::vector<std::unique_ptr<Node>> children;
  Node* parent = nullptr;

  bool is_element() const { return !tag.empty(); }
  const std::string* attribute(const std::string& name) const;
  bool has_class(const std::string& cls) const;
  // Every descendant text, concatenated.
  std::string text_content() const;
  // Every descendant element (not this one) in document order, optionally only one tag.
  std::vector<const Node*> elements(const std::string& tag = "") const;
  const Node* find_id(const std::string& id) const;
};

// Parses a serialized document; the root is a synthetic element with tag "#document".
std::unique_ptr<Node> parse_dom(const std::string& html);

}  // namespace qc::test
