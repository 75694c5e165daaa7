#include "probe/prober.hpp"

// Placeholder so the interface links while the engine is written; replaced by the real engine.
namespace weft::probe {
struct Prober::Impl {};
Prober::Prober(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Prober::~Prober() = default;
Result<std::unique_ptr<Prober>> Prober::create(const ProberConfig&) { return fail("prober: not implemented yet"); }
void Prober::set_targets(std::vector<Target>) {}
void Prober::set_on_probe(std::function<void(const ProbeResult&)>) {}
Status Prober::run(std::function<void(WindowStats&&)>) { return fail("prober: not implemented yet"); }
void Prober::stop() {}
ProberCounters Prober::counters() const { return {}; }
}  // namespace weft::probe
