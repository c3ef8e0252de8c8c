/* A plugin that answers nonsense: config {"mode":"bad_verdict"} returns verdict 7,
   {"mode":"empty_accept"} accepts without currency, {"mode":"hang"} never returns (30 s),
   {"mode":"echo_source"} rejects with the reading's source name as its message, {"mode":"slow"} takes
   80 ms and passes, {"mode":"liar"} accepts every coin as 10^15 with a code that is not text,
   {"mode":"fake_currency"} accepts it as 25 of "ZZZ", {"mode":"odd_value"} as 37 cents of USD. destroy() calls are counted so tests can
   see instances freed when the last chain holding them goes away. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "coinmech_plugin.h"

static int destroyed;
int fixture_destroyed_count(void) { return destroyed; }

static void *create(const char *config, char *error, size_t size) {
    if (strstr(config, "bad_verdict")) return (void *)1;
    if (strstr(config, "empty_accept")) return (void *)2;
    if (strstr(config, "pass")) return (void *)3;
    if (strstr(config, "hang")) return (void *)4;
    if (strstr(config, "echo_source")) return (void *)5;
    if (strstr(config, "slow")) return (void *)6;
    if (strstr(config, "liar")) return (void *)7;
    if (strstr(config, "fake_currency")) return (void *)8;
    if (strstr(config, "odd_value")) return (void *)9;
    coinmech_copy_field(error, size, "mode must be bad_verdict, empty_accept, pass, hang, echo_source, slow, liar, fake_currency or odd_value");
    return NULL;
}
static void validate(void *ctx, const coinmech_reading *r, coinmech_decision *d) {
    if (ctx == (void *)1) d->verdict = 7;
    else if (ctx == (void *)2) d->verdict = COINMECH_VERDICT_ACCEPT;
    else if (ctx == (void *)4) sleep(30);  /* a wedged plugin: the deciding loop stops turning */
    else if (ctx == (void *)5) coinmech_decision_reject(d, "echo", r->source ? r->source : "(null)");
    else if (ctx == (void *)6) usleep(80000);  /* slower than the mech's 50 ms deadline */
    else if (ctx == (void *)7) coinmech_decision_accept(d, "USD", "\xff\xfe\x01quarter", 1000000000000000LL);
    else if (ctx == (void *)8) coinmech_decision_accept(d, "ZZZ", "quarter", 25);
    else if (ctx == (void *)9) coinmech_decision_accept(d, "USD", "quarter", 37);
}
static void destroy(void *ctx) { (void)ctx; destroyed++; }

int coinmech_plugin_entry(uint32_t host_abi_version, coinmech_plugin *plugin) {
    plugin->abi_version = COINMECH_PLUGIN_ABI_VERSION;
    plugin->size = sizeof *plugin;
    if (host_abi_version != COINMECH_PLUGIN_ABI_VERSION) return 1;
    plugin->name = "misbehaving";
    plugin->version = "0.1";
    plugin->create = create;
    plugin->validate = validate;
    plugin->destroy = destroy;
    return 0;
}
