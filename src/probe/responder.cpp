#include "probe/responder.hpp"

// Placeholder so the interface links while the engine is written; replaced by the real engine.
namespace weft::probe {
struct Responder::Impl {};
Responder::Responder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Responder::~Responder() = default;
Result<std::unique_ptr<Responder>> Responder::create(const ResponderConfig&) { return fail("responder: not implemented yet"); }
Status Responder::run() { return fail("responder: not implemented yet"); }
void Responder::stop() {}
ResponderCounters Responder::counters() const { return {}; }
uint16_t Responder::udp_port() const { return 0; }
uint16_t Responder::tcp_port() const { return 0; }
}  // namespace weft::probe
