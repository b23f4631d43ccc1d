/* A plugin built for a future ABI: its table says version 99 (the field is always first). */
#include "qconform/plugin.h"

static const qconform_plugin_v1 kPlugin = {99u, "from-the-future", 1u, 0u, NULL, NULL};

__attribute__((visibility("default"))) const qconform_plugin_v1* qconform_plugin_entry(uint32_t host_abi_version) {
  (void)host_abi_version;
  return &kPlugin;
}
