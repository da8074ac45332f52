// A saga definition's state diagram as inline SVG, laid out by Graphviz (libgvc, "dot"),
// with the saga's path and current state highlighted. The same states and edges as
// once.saga_diagram's Mermaid text (docs/sagas.md).
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace once::console {

struct DiagramStep {
    std::string name;
    std::string kind;            // compensable | pivot | retriable
    std::string action;          // "topic X" or "function f"
    std::string compensation;    // "" = none
    int max_attempts = 0;
};

struct DiagramPath {
    std::set<std::string> nodes;   // node ids visited: step names, "undo_<step>", completed...
    std::set<std::pair<std::string, std::string>> edges;   // transitions taken (from, to)
    std::string current;           // node id of the current state ("" = none)
};

// The DOT text (exposed for tests).
std::string saga_dot(const std::vector<DiagramStep>& steps, const DiagramPath& path);
// Renders DOT as an <svg> element (no XML prologue). Throws std::runtime_error.
std::string render_svg(const std::string& dot);

}  // namespace once::console
