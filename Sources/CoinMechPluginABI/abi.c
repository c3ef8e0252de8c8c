// Compile-time checks of the ABI's layout: these offsets are a promise to plugins.
#include "coinmech_plugin.h"

_Static_assert(offsetof(coinmech_reading, size) == 0, "reading starts with its size");
_Static_assert(offsetof(coinmech_decision, size) == 0, "decision starts with its size");
_Static_assert(sizeof(coinmech_reading) == 64, "reading layout of ABI 1");
_Static_assert(sizeof(coinmech_decision) == 216, "decision layout of ABI 1");
