#include <iostream>

#include "gnnpipe/experiments/cli.hpp"

int main(int argc, char** argv) { return gnnpipe::experiments::run_cli(argc, argv, std::cout, std::cerr); }
