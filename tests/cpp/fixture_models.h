// The test fixtures by name (tests/fixtures/, or any file of the repository) and the models
// among them, each loaded once per test program and kept for its life.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "model/gpt_model.h"

namespace specdec::testing {

inline std::string repo(const std::string& path) {
  return std::string(SPECDEC_SOURCE_DIR) + "/" + path;
}

inline std::string fixture(const std::string& name) { return repo("tests/fixtures/" + name); }

// The model file tests/fixtures/<name>, loaded on first use.
inline const GPTModel& fixture_model(const std::string& name) {
  static std::map<std::string, std::unique_ptr<GPTModel>> loaded;
  std::unique_ptr<GPTModel>& model = loaded[name];
  if (!model) model = std::make_unique<GPTModel>(GPTModel::from_file(fixture(name)));
  return *model;
}

}  // namespace specdec::testing
