import Foundation
package import GRDB
package import SeedSyncModel

extension ScopeGrant {
    /// The JSON array of the grant's values, bound where ``TableSQL`` filters the rows of `type` by
    /// scope value (`json_each(?)`): `nil` for a shared type or a grant of every value, whose rows
    /// are all read.
    package func argument(for type: EntityType, in schema: DatasetSchema) -> DatabaseValue? {
        guard type.isScoped, let scope = schema.scope, let values = sortedValues(as: scope.type) else { return nil }
        var writer = JSONWriter()
        writer.value(.array(values))
        return String(decoding: writer.bytes, as: UTF8.self).databaseValue
    }
}
