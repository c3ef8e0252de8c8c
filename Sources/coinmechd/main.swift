import CoinMechDaemon

// Before anything can start a thread: TERM, INT and HUP stay pending until the daemon reads
// them (see LifecycleSignals), so none can kill it by its default action during start-up.
LifecycleSignals.blockBeforeAnyThreadStarts()
DaemonMemory.tune()
CoinMechDaemonCommand.mainKeepingSignalsBlocked()
