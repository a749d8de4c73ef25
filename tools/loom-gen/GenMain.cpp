// The main() of every generator executable: link this library (CMake:
// Loom::generator_main, or loom_add_generator) with sources that use
// LOOM_REGISTER_GENERATOR, and the program becomes a generator driver for
// them. Options: run it with --help.
#include <loom/Generator.h>

int main(int argc, char **argv) { return loom::generator_main(argc, argv); }
