/* A shared library that is not a qconform plugin (no qconform_plugin_entry). */
int not_a_plugin(void) { return 0; }
