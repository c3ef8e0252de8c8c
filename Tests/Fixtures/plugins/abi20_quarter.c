/*
 * A plugin built against ABI 2.0's coinmech_plugin.h (Tests/Fixtures/abi-2.0): it knows nothing
 * of the alloy axis. It credits anything of a US quarter's size and weight, as a validator of
 * diameter and weight alone would. Old plugins must keep loading and deciding on a 2.1 host.
 */
#include <coinmech_plugin.h>
#include <stdlib.h>

#if COINMECH_PLUGIN_ABI_VERSION != 0x00020000u
#error "build this fixture with Tests/Fixtures/abi-2.0/include first on the include path"
#endif

static void *create(const coinmech_host *host, const char *config, char *error, size_t error_size) {
    (void)host; (void)config; (void)error; (void)error_size;
    return malloc(1);
}

static void validate(void *instance, const coinmech_reading *r, coinmech_decision *d) {
    (void)instance;
    if (!COINMECH_HAS_FIELD(r, coinmech_reading, weight_g)) return;
    if (!(r->flags & COINMECH_READING_HAS_DIAMETER) || !(r->flags & COINMECH_READING_HAS_WEIGHT)) return;
    if (r->diameter_mm > 24.0 && r->diameter_mm < 24.5 && r->weight_g > 5.4 && r->weight_g < 5.95)
        coinmech_decision_accept(d, "USD", "quarter", 25);
}

static void destroy(void *instance) { free(instance); }

static const coinmech_plugin me = {
    .abi_version = COINMECH_PLUGIN_ABI_VERSION, .size = sizeof me, .name = "abi20-quarter", .version = "1.0.0",
    .license = "MIT", .description = "credits a US quarter's size and weight (built for ABI 2.0)",
    .reading_kinds = COINMECH_KINDS_MEASURED, .create = create, .validate = validate, .destroy = destroy,
};

__attribute__((visibility("default"))) int coinmech_plugin_entry(uint32_t host_abi, coinmech_plugin *out) {
    return coinmech_plugin_offer(host_abi, out, &me);
}
