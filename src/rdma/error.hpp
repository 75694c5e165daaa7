#pragma once
// How src/rdma reports failures: every message names the verb and the errno or the
// work-completion status, e.g. "RDMA_WRITE completion (wr_id 3, qp 0x11): IBV_WC_REM_ACCESS_ERR
// (remote access error)". Device absence has one message that starts "no RDMA device: ".
#include <infiniband/verbs.h>

#include <string>
#include <string_view>

#include "base/result.hpp"

namespace weft::rdma {

// "ibv_reg_mr: Cannot allocate memory (errno 12)". Verbs return errno as a value or set errno;
// callers pass whichever they got.
[[nodiscard]] std::unexpected<Error> verb_error(std::string_view verb, int err);

// "no RDMA device: <why>", code ENODEV unless a more precise errno is known.
[[nodiscard]] std::unexpected<Error> no_device(std::string_view why, int err = 0);

bool is_no_device(const Error& e);

// "IBV_WC_REM_ACCESS_ERR"; "IBV_WC_STATUS_<n>" for unknown values.
std::string_view wc_status_name(ibv_wc_status status);
// "RDMA_WRITE", "RECV_RDMA_WITH_IMM", ...
std::string_view wc_opcode_name(ibv_wc_opcode opcode);

// Ok for IBV_WC_SUCCESS; otherwise an error naming the operation, wr_id, QP and status.
[[nodiscard]] Status check_completion(const ibv_wc& wc);

// Whether a completion error with this status (check_completion's code) can be the peer process
// dying mid-transfer: its memory regions are gone (remote access, invalid request, operation
// errors), its QP is gone (retries exceeded), or ours was flushed after one of these. Callers
// then look at their side channel before they report the raw status.
bool peer_death_can_cause(int wc_status);

}  // namespace weft::rdma
