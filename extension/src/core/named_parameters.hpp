// Named parameters for internal SQL: a statement with many parameters says :name where SPI
// wants $n, so a call binds each value by name and two cannot be swapped unnoticed.
#pragma once

#include <string>
#include <vector>

namespace once {

// `sql` with every :name of `names` replaced by $n (n = its 1-based index in `names`). A
// "::" cast is left alone, as is a :word that is not in `names`. Throws std::invalid_argument
// when a name of `names` does not occur in `sql`, or occurs twice in `names`.
std::string numbered_parameters(const std::string& sql, const std::vector<std::string>& names);

}  // namespace once
