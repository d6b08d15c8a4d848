import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import SeedSyncModel
import SeedSyncServer
import SeedSyncStore
import SeedSyncTesting

/// Tokens every server test uses.
enum TestTokens {
    static let read = "read-token-1"
    static let admin = "admin-token-1"
    static let set = TokenSet(readTokens: [read, "read-token-2"], adminTokens: [admin])
}

func testConfiguration(_ change: (inout ServerConfiguration) -> Void = { _ in }) -> ServerConfiguration {
    var configuration = ServerConfiguration(port: 0, tokens: TestTokens.set)
    change(&configuration)
    return configuration
}

func headers(token: String? = TestTokens.read, _ extra: HTTPFields = [:]) -> HTTPFields {
    var fields = extra
    if let token { fields[.authorization] = "Bearer \(token)" }
    return fields
}

func body(_ json: String) -> ByteBuffer {
    ByteBuffer(string: json)
}

/// The `code` of an error answer, or `nil` when the body is not one.
func errorCode(_ response: TestResponse) -> String? {
    (try? JSONDecoder().decode(ErrorResponse.self, from: Data(buffer: response.body)))?.error.code
}

func decode<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
    try JSONDecoder().decode(type, from: Data(buffer: response.body))
}
