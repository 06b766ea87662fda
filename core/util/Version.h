// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QString>

namespace airlock {

// Airlock's version, from one place (installer/Version.cmake): "0.1.0", or "0.1.0+git214.ca5649a"
// past the release tag. Defined in a file generated at configure time, so that a new version
// recompiles that file alone.
QString version();

} // namespace airlock
