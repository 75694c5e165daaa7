#pragma once
// What `weft stack run` tells the preloaded library through the environment: the device, the
// stack's address and routes, and which process owns the stack. One definition for both sides.
#include <cstdint>
#include <string>

namespace weft::posix::env {

inline constexpr const char* kDevice = "WEFT_STACK_DEVICE";    // packet (AF_PACKET on kIfname)
inline constexpr const char* kIfname = "WEFT_STACK_IFNAME";    // the interface the stack takes
inline constexpr const char* kIp = "WEFT_STACK_IP";            // A.B.C.D/P
inline constexpr const char* kGateway = "WEFT_STACK_GATEWAY";  // A.B.C.D, optional
inline constexpr const char* kOwner = "WEFT_STACK_PID";  // the process that opens the device (the program)
inline constexpr const char* kBuffer = "WEFT_STACK_BUFFER";  // each connection's send/receive ring, bytes
inline constexpr const char* kNoTso = "WEFT_STACK_NO_TSO";   // 1: one MSS per frame
inline constexpr const char* kNoVnetHdr = "WEFT_STACK_NO_VNET_HDR";        // 1: checksums in software
inline constexpr const char* kVerbose = "WEFT_STACK_VERBOSE";              // 1: a line per socket routed
inline constexpr const char* kDriveInWaits = "WEFT_STACK_DRIVE_IN_WAITS";  // 1: blocked threads run the stack
inline constexpr const char* kPreload = "WEFT_PRELOAD";  // `weft stack run`: the library to load

}  // namespace weft::posix::env
