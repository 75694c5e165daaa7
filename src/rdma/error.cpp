#include "rdma/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace weft::rdma {

std::unexpected<Error> verb_error(std::string_view verb, int err) {
  return std::unexpected(Error{fmt::format("{}: {} (errno {})", verb, std::strerror(err), err), err});
}

std::unexpected<Error> no_device(std::string_view why, int err) {
  return std::unexpected(Error{fmt::format("no RDMA device: {}", why), err != 0 ? err : ENODEV});
}

bool is_no_device(const Error& e) { return e.message.starts_with("no RDMA device: "); }

std::string_view wc_status_name(ibv_wc_status status) {
  switch (status) {
#define WEFT_WC(x) \
  case x:          \
    return #x;
    WEFT_WC(IBV_WC_SUCCESS)
    WEFT_WC(IBV_WC_LOC_LEN_ERR)
    WEFT_WC(IBV_WC_LOC_QP_OP_ERR)
    WEFT_WC(IBV_WC_LOC_EEC_OP_ERR)
    WEFT_WC(IBV_WC_LOC_PROT_ERR)
    WEFT_WC(IBV_WC_WR_FLUSH_ERR)
    WEFT_WC(IBV_WC_MW_BIND_ERR)
    WEFT_WC(IBV_WC_BAD_RESP_ERR)
    WEFT_WC(IBV_WC_LOC_ACCESS_ERR)
    WEFT_WC(IBV_WC_REM_INV_REQ_ERR)
    WEFT_WC(IBV_WC_REM_ACCESS_ERR)
    WEFT_WC(IBV_WC_REM_OP_ERR)
    WEFT_WC(IBV_WC_RETRY_EXC_ERR)
    WEFT_WC(IBV_WC_RNR_RETRY_EXC_ERR)
    WEFT_WC(IBV_WC_LOC_RDD_VIOL_ERR)
    WEFT_WC(IBV_WC_REM_INV_RD_REQ_ERR)
    WEFT_WC(IBV_WC_REM_ABORT_ERR)
    WEFT_WC(IBV_WC_INV_EECN_ERR)
    WEFT_WC(IBV_WC_INV_EEC_STATE_ERR)
    WEFT_WC(IBV_WC_FATAL_ERR)
    WEFT_WC(IBV_WC_RESP_TIMEOUT_ERR)
    WEFT_WC(IBV_WC_GENERAL_ERR)
    WEFT_WC(IBV_WC_TM_ERR)
    WEFT_WC(IBV_WC_TM_RNDV_INCOMPLETE)
#undef WEFT_WC
  }
  return "IBV_WC_STATUS_UNKNOWN";
}

std::string_view wc_opcode_name(ibv_wc_opcode opcode) {
  switch (opcode) {
    case IBV_WC_SEND:
      return "SEND";
    case IBV_WC_RDMA_WRITE:
      return "RDMA_WRITE";
    case IBV_WC_RDMA_READ:
      return "RDMA_READ";
    case IBV_WC_COMP_SWAP:
      return "COMP_SWAP";
    case IBV_WC_FETCH_ADD:
      return "FETCH_ADD";
    case IBV_WC_BIND_MW:
      return "BIND_MW";
    case IBV_WC_LOCAL_INV:
      return "LOCAL_INV";
    case IBV_WC_TSO:
      return "TSO";
    case IBV_WC_RECV:
      return "RECV";
    case IBV_WC_RECV_RDMA_WITH_IMM:
      return "RECV_RDMA_WITH_IMM";
    default:
      return "OPCODE_UNKNOWN";
  }
}

Status check_completion(const ibv_wc& wc) {
  if (wc.status == IBV_WC_SUCCESS) return {};
  // The opcode field is only valid on success; a flushed or failed WR is named by its wr_id.
  return std::unexpected(
      Error{fmt::format("work completion (wr_id {}, qp 0x{:x}): {} ({}), vendor_err 0x{:x}", wc.wr_id,
                        wc.qp_num, wc_status_name(wc.status), ibv_wc_status_str(wc.status), wc.vendor_err),
            static_cast<int>(wc.status)});
}

bool peer_death_can_cause(int wc_status) {
  switch (wc_status) {
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
    case IBV_WC_REM_OP_ERR:
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
    case IBV_WC_WR_FLUSH_ERR:
      return true;
    default:
      return false;
  }
}

}  // namespace weft::rdma
