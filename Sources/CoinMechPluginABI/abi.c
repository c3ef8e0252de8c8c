// Compile-time checks of the ABI's layout: these offsets are a promise to plugins.
#include "coinmech_plugin.h"

// Every struct starts with its size (coinmech_plugin with its version, then its size).
_Static_assert(offsetof(coinmech_reading, size) == 0, "reading starts with its size");
_Static_assert(offsetof(coinmech_decision, size) == 0, "decision starts with its size");
_Static_assert(offsetof(coinmech_host, size) == 0, "host services start with their size");
_Static_assert(offsetof(coinmech_plugin, abi_version) == 0 && offsetof(coinmech_plugin, size) == 4,
               "plugin starts with its version and size, in every ABI");

// ABI 1's fields keep their places; 2.0 appends.
_Static_assert(offsetof(coinmech_reading, channel) == 48 && offsetof(coinmech_reading, kind) == 52 &&
               offsetof(coinmech_reading, source) == 56, "reading fields of ABI 1 stay put");
_Static_assert(offsetof(coinmech_reading, coin_position) == 64, "ABI 2.0 appends the coin id fields");
_Static_assert(offsetof(coinmech_reading, conductivity_low_iacs) == 88, "ABI 2.1 appends the alloy axis where 2.0's reading ended");
_Static_assert(sizeof(coinmech_reading) == 112, "reading layout of ABI 2.1");
_Static_assert(sizeof(coinmech_decision) == 216, "decision layout of ABI 2.0 (unchanged since 1)");
_Static_assert(sizeof(coinmech_host) == 40, "host services layout of ABI 2.0");
_Static_assert(sizeof(coinmech_plugin) == 88, "plugin layout of ABI 2.0");
_Static_assert(COINMECH_PLUGIN_ABI_VERSION == ((COINMECH_PLUGIN_ABI_MAJOR << 16) | COINMECH_PLUGIN_ABI_MINOR), "version word");
_Static_assert(COINMECH_KINDS_MEASURED == 1u << COINMECH_READING_MEASURED && COINMECH_KINDS_COIN_ID == 1u << COINMECH_READING_COIN_ID,
               "kind bits");
_Static_assert((COINMECH_KINDS_ALLOY & (COINMECH_KINDS_MEASURED | COINMECH_KINDS_COIN_ID)) == 0, "the alloy kind bit is a bit of its own");
_Static_assert(COINMECH_ABI_MAJOR_OF(1u) == 1u && COINMECH_ABI_MAJOR_OF(COINMECH_PLUGIN_ABI_VERSION) == 2u,
               "version words of ABI 1 and 2 decode");
