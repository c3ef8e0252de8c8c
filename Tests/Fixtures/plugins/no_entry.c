/* A shared object that is not a CoinMech plugin: no entry symbol. */
int some_other_library_function(int x) { return x + 1; }
