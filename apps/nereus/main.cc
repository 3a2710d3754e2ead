// nereus: the command-line entry point.

#include <CLI/CLI.hpp>

#include <cstdio>

int main(int argc, char** argv) {
    CLI::App app{"Nereus: a streaming broker that speaks the Apache Pulsar protocol"};
    app.require_subcommand(1);

    auto* standalone = app.add_subcommand("standalone", "Run a single-node broker");
    std::string data_dir = "./data";
    standalone->add_option("--data-dir", data_dir, "Data directory")->capture_default_str();
    standalone->callback([&] {
        std::fprintf(stderr,
                     "nereus standalone: the Pulsar-protocol broker is not implemented yet "
                     "(see the README's 'Not supported yet'). Nothing was started.\n");
        throw CLI::RuntimeError(2);
    });

    CLI11_PARSE(app, argc, argv);
    return 0;
}
