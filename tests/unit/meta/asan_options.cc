// ASan defaults for meta_unit_tests, the test binary that runs libzookeeper_mt in-process.
//
// On a session expiry the ZooKeeper C client's own I/O thread (zookeeper_process) can leave a
// completion it allocated unfreed (see lsan.supp, "zookeeper_process"). With ASan's default fast
// unwinder the leak's allocation stack stops at the first frame inside the library (built
// without frame pointers, so unnamed), and no suppression can name it: the ASan run failed
// about once in 40 runs of ZkStore.TheStoresOwnSessionExpiringIsRecoveredFrom. The slow unwinder
// walks through the library to zookeeper_process, which lsan.supp names. It costs this binary
// ~40 % more time under ASan (17 -> 24 s); ASAN_OPTIONS from the environment still wins.
// Outside ASan builds the function is never called.

extern "C" __attribute__((used, visibility("default"))) const char* __asan_default_options() {
    return "fast_unwind_on_malloc=0";
}
