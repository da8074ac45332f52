#include "diagram.hpp"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <mutex>
#include <stdexcept>

namespace once::console {

namespace {

std::string q(const std::string& s) {   // a DOT double-quoted string
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out.push_back('\\');
        if (c == '\n') { out += "\\n"; continue; }
        out.push_back(c);
    }
    return out + "\"";
}

}  // namespace

std::string saga_dot(const std::vector<DiagramStep>& steps, const DiagramPath& path) {
    std::string dot = "digraph saga {\n  rankdir=LR; bgcolor=\"transparent\";\n"
                      "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", color=\"#8a94a6\", "
                      "fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8, color=\"#8a94a6\", "
                      "fontcolor=\"#555555\"];\n";
    auto node = [&](const std::string& id, const std::string& label, const std::string& extra = "") {
        std::string attrs = "label=" + q(label);
        if (id == path.current) attrs += ", fillcolor=\"#ffd24d\", color=\"#b35900\", penwidth=3";
        else if (path.nodes.count(id)) attrs += ", fillcolor=\"#dbe9ff\", color=\"#2b6cb0\", penwidth=2";
        if (!extra.empty()) attrs += ", " + extra;
        dot += "  " + q(id) + " [" + attrs + ", id=" + q("node_" + id) + "];\n";
    };
    auto edge = [&](const std::string& a, const std::string& b, const std::string& label) {
        bool on_path = path.edges.count({a, b}) > 0;
        dot += "  " + q(a) + " -> " + q(b) + " [label=" + q(label) +
               (on_path ? ", color=\"#2b6cb0\", penwidth=2" : "") + "];\n";
    };
    node("start", "start", "shape=circle, width=0.25, label=\"\", fillcolor=\"#333333\"");
    node("completed", "completed", "shape=doublecircle");
    node("compensated", "compensated", "shape=doublecircle");
    node("failed", "failed\n(a person acts)", "shape=octagon");
    for (const auto& s : steps) {
        node(s.name, s.name + " (" + s.kind + ")\n" + s.action);
        if (!s.compensation.empty()) node("undo_" + s.name, "compensate " + s.name + "\n" + s.compensation);
    }
    if (!steps.empty()) edge("start", steps.front().name, "");
    else edge("start", "completed", "");
    // The compensation that follows when step i fails: the nearest earlier step with one.
    auto undo_before = [&](size_t i) -> std::string {
        for (size_t j = i; j-- > 0;)
            if (!steps[j].compensation.empty()) return "undo_" + steps[j].name;
        return "compensated";
    };
    for (size_t i = 0; i < steps.size(); ++i) {
        const auto& s = steps[i];
        edge(s.name, i + 1 < steps.size() ? steps[i + 1].name : "completed", "succeeded");
        if (s.kind == "retriable") {
            edge(s.name, s.name, "failed / timeout (retry)");
            continue;
        }
        edge(s.name, undo_before(i), "failed");
        std::string timed = s.max_attempts > 0 ? "timed out " + std::to_string(s.max_attempts) + "x" : "timed out";
        edge(s.name, s.compensation.empty() ? "failed" : "undo_" + s.name, timed);
        if (!s.compensation.empty()) {
            edge("undo_" + s.name, undo_before(i), "compensated");
            edge("undo_" + s.name, "failed", "kept failing");
        }
    }
    dot += "}\n";
    return dot;
}

std::string render_svg(const std::string& dot) {
    // Graphviz keeps global state: one rendering at a time.
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    static GVC_t* gvc = gvContext();
    Agraph_t* g = agmemread(dot.c_str());
    if (!g) throw std::runtime_error("Graphviz could not read the diagram");
    char* buf = nullptr;
    unsigned int len = 0;
    int rc = gvLayout(gvc, g, "dot");
    if (rc == 0) rc = gvRenderData(gvc, g, "svg", &buf, &len);
    std::string svg = rc == 0 && buf ? std::string(buf, len) : std::string();
    if (buf) gvFreeRenderData(buf);
    gvFreeLayout(gvc, g);
    agclose(g);
    if (rc != 0 || svg.empty()) throw std::runtime_error("Graphviz could not lay out the diagram (is libgvc6's dot plugin installed?)");
    auto start = svg.find("<svg");
    if (start != std::string::npos) svg = svg.substr(start);
    // Scale to the page's width (the viewBox keeps the proportions).
    auto end = svg.find('>');
    auto w = svg.find(" width=\"");
    if (w != std::string::npos && w < end) {
        auto close = svg.find('"', w + 8);
        svg.replace(w, close - w + 1, " width=\"100%\"");
        end = svg.find('>');
        auto h = svg.find(" height=\"");
        if (h != std::string::npos && h < end) svg.erase(h, svg.find('"', h + 9) - h + 1);
    }
    return svg;
}

}  // namespace once::console
