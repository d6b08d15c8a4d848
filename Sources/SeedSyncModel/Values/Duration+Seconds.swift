extension Duration {
    /// The duration in seconds, for reports and logs: `1.25` for 1 s 250 ms.
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
