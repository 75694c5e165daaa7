# Sourced by the tests that boot a qemu guest (lab/rdma-guest, lab/systemd-guest): skips the test
# (exit 77, ctest's SKIP_RETURN_CODE) with the reason when this machine cannot boot one.
#   guest_preconditions WHAT   e.g. guest_preconditions "the Soft-RoCE guest"
guest_preconditions() {
  [[ $(id -u) -eq 0 ]] || { echo "skip: $1: needs root"; exit 77; }
  command -v qemu-system-x86_64 >/dev/null || { echo "skip: qemu-system-x86_64 not installed"; exit 77; }
  compgen -G "/boot/vmlinuz-*" >/dev/null || { echo "skip: no Debian kernel in /boot"; exit 77; }
}
