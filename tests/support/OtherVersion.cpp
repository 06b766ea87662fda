// SPDX-License-Identifier: Apache-2.0
// Linked into airlockd-other-version before airlock_core (a static library): its airlock::version()
// is taken instead of the generated one, so that daemon is today's code saying it is another
// release, as an old daemon still running after an upgrade (or a newer one) would.
#include "util/Version.h"

QString airlock::version()
{
    return QStringLiteral("0.0.0-other");
}
