import Foundation

/// A value shared between tasks, read and replaced under a lock.
package final class LockedValue<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    package func get() -> Value { lock.withLock { value } }

    package func set(_ newValue: Value) { lock.withLock { value = newValue } }

    /// Replaces the value with `newValue` when `isNewer(newValue, value)`, in one step.
    package func set(_ newValue: Value, ifNewerThanCurrent isNewer: (Value, Value) -> Bool) {
        lock.withLock { if isNewer(newValue, value) { value = newValue } }
    }

    /// Changes the value in place under the lock; what `change` returns.
    @discardableResult
    package func update<Result>(_ change: (inout Value) -> Result) -> Result {
        lock.withLock { change(&value) }
    }
}
