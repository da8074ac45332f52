// Helpers for the page tests: whether a rendered page contains a piece of HTML.
#pragma once

#include <string>

inline bool contains(const std::string& html, const std::string& part) { return html.find(part) != std::string::npos; }
