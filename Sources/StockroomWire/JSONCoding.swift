import Foundation
import StockroomCore

/// The JSON encoders and decoders of the contract: RFC 3339 UTC times with milliseconds. The SDK
/// encodes its requests with the encoder; the server writes its answers with `JSONWriter`.
public enum JSONCoding {
    /// An encoder writing times as `2026-11-22T06:00:00.123Z`.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Timestamp.format(date))
        }
        return encoder
    }

    /// A decoder reading RFC 3339 times with or without fractional seconds.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let string = try container.decode(String.self)
            guard let date = Timestamp.parse(string) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "'\(string)' is not an RFC 3339 time")
            }
            return date
        }
        return decoder
    }
}
