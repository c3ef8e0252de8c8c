/*
 * weight-floor: a guard written in plain C, to show the plugin ABI is language-neutral.
 * Rejects readings lighter than "min_weight_g" (washers, plastic tokens, foil); passes the rest.
 *
 * Configuration: {"min_weight_g": 1.5}
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weight_floor.h"

typedef struct weight_floor {
    double min_weight_g;
    char message[COINMECH_MESSAGE_SIZE];
} weight_floor;

static void fail(char *error, size_t error_size, const char *message) {
    if (error && error_size > 0) coinmech_copy_field(error, error_size, message);
}

/* Finds "min_weight_g" in a flat JSON object and parses its number. The only key allowed. */
static int parse_config(const char *json, double *min_weight, char *error, size_t error_size) {
    const char *p = json ? json : "{}";
    while (isspace((unsigned char)*p)) p++;
    if (*p != '{') { fail(error, error_size, "configuration must be a table"); return -1; }
    p++;
    while (isspace((unsigned char)*p)) p++;
    if (*p == '}') { fail(error, error_size, "missing key 'min_weight_g'"); return -1; }
    static const char key[] = "\"min_weight_g\"";
    if (strncmp(p, key, sizeof key - 1) != 0) {
        fail(error, error_size, "unknown key (known: min_weight_g)");
        return -1;
    }
    p += sizeof key - 1;
    while (isspace((unsigned char)*p)) p++;
    if (*p != ':') { fail(error, error_size, "configuration is not valid JSON"); return -1; }
    p++;
    char *end = NULL;
    errno = 0;
    double value = strtod(p, &end);
    if (end == p || errno != 0 || !isfinite(value) || value <= 0 || value > 100) {
        fail(error, error_size, "key 'min_weight_g' must be a number between 0 and 100");
        return -1;
    }
    while (isspace((unsigned char)*end)) end++;
    if (*end != '}') { fail(error, error_size, "unknown key (known: min_weight_g)"); return -1; }
    *min_weight = value;
    return 0;
}

static void *create(const coinmech_host *host, const char *config_json, char *error, size_t error_size) {
    (void)host;
    double min_weight = 0;
    if (parse_config(config_json, &min_weight, error, error_size) != 0) return NULL;
    weight_floor *self = calloc(1, sizeof *self);
    if (!self) { fail(error, error_size, "out of memory"); return NULL; }
    self->min_weight_g = min_weight;
    snprintf(self->message, sizeof self->message, "lighter than %.3g g: washer, token or foil?", min_weight);
    return self;
}

static void validate(void *instance, const coinmech_reading *reading, coinmech_decision *decision) {
    const weight_floor *self = instance;
    if (!(reading->flags & COINMECH_READING_HAS_WEIGHT)) return;
    if (reading->weight_g < self->min_weight_g) coinmech_decision_reject(decision, "too_light", self->message);
}

static void destroy(void *instance) { free(instance); }

static size_t describe(void *instance, char *buf, size_t size) {
    const weight_floor *self = instance;
    int n = snprintf(buf, size, "{\"min_weight_g\":%g}", self->min_weight_g);
    return n < 0 ? 0 : (size_t)n;
}

static const coinmech_plugin weight_floor_plugin = {
    .abi_version = COINMECH_PLUGIN_ABI_VERSION,
    .size = sizeof(coinmech_plugin),
    .name = "weight-floor",
    .version = "2.0.0",
    .license = "LicenseRef-CoinMech",
    .description = "rejects readings lighter than a configured weight: washers, plastic tokens, foil",
    .reading_kinds = COINMECH_KINDS_MEASURED,
    .flags = COINMECH_PLUGIN_CONCURRENT_INSTANCES,
    .create = create,
    .validate = validate,
    .destroy = destroy,
    .describe = describe,
};

int coinmech_plugin_entry(uint32_t host_abi_version, coinmech_plugin *plugin) {
    return coinmech_plugin_offer(host_abi_version, plugin, &weight_floor_plugin);
}
