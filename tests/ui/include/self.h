// Includes itself without a guard: the include depth limit ends it.
#include "self.h"
