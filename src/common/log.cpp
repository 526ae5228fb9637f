#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace akts {

void init_logging(int verbosity) {
  auto logger = spdlog::stderr_color_mt("akts");
  logger->set_pattern("%^[%l]%$ %v");
  logger->set_level(verbosity >= 2 ? spdlog::level::trace
                    : verbosity == 1 ? spdlog::level::debug
                                     : spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace akts
