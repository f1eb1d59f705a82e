// Stop strings over streamed text: releases text as soon as it can no longer be the start of a
// stop string, and cuts the output just before the first stop string that appears (OpenAI's
// `stop`: the stop string itself is not returned).
#pragma once

#include <string>
#include <vector>

namespace tzero {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);
  // Adds generated text; returns the text that is now safe to release (possibly empty).
  // After a stop string appears, stopped() is true and nothing more is released.
  std::string push(const std::string& text);
  // Releases what is still held back (generation ended without a stop string).
  std::string finish();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace tzero
