"""Field ids, names and enums of the Parquet metadata structs (parquet-format's parquet.thrift)."""

from __future__ import annotations

MAGIC = b"PAR1"
ENCRYPTED_MAGIC = b"PARE"

TYPES = {0: "BOOLEAN", 1: "INT32", 2: "INT64", 3: "INT96", 4: "FLOAT", 5: "DOUBLE",
         6: "BYTE_ARRAY", 7: "FIXED_LEN_BYTE_ARRAY"}
CONVERTED_TYPES = {0: "UTF8", 1: "MAP", 2: "MAP_KEY_VALUE", 3: "LIST", 4: "ENUM", 5: "DECIMAL",
                   6: "DATE", 7: "TIME_MILLIS", 8: "TIME_MICROS", 9: "TIMESTAMP_MILLIS",
                   10: "TIMESTAMP_MICROS", 11: "UINT_8", 12: "UINT_16", 13: "UINT_32",
                   14: "UINT_64", 15: "INT_8", 16: "INT_16", 17: "INT_32", 18: "INT_64",
                   19: "JSON", 20: "BSON", 21: "INTERVAL"}
REPETITIONS = {0: "REQUIRED", 1: "OPTIONAL", 2: "REPEATED"}
ENCODINGS = {0: "PLAIN", 1: "GROUP_VAR_INT", 2: "PLAIN_DICTIONARY", 3: "RLE", 4: "BIT_PACKED",
             5: "DELTA_BINARY_PACKED", 6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY",
             8: "RLE_DICTIONARY", 9: "BYTE_STREAM_SPLIT"}
CODECS = {0: "UNCOMPRESSED", 1: "SNAPPY", 2: "GZIP", 3: "LZO", 4: "BROTLI", 5: "LZ4", 6: "ZSTD",
          7: "LZ4_RAW"}
PAGE_TYPES = {0: "DATA_PAGE", 1: "INDEX_PAGE", 2: "DICTIONARY_PAGE", 3: "DATA_PAGE_V2"}
DICTIONARY_PAGE = 2  # the PageType of a dictionary page
DICTIONARY_ENCODINGS = (2, 8)  # PLAIN_DICTIONARY, RLE_DICTIONARY: data pages that need a dictionary page
BOUNDARY_ORDERS = {0: "UNORDERED", 1: "ASCENDING", 2: "DESCENDING"}
# LogicalType is a union: the id of the field that is set names the type.
LOGICAL_TYPES = {1: "STRING", 2: "MAP", 3: "LIST", 4: "ENUM", 5: "DECIMAL", 6: "DATE", 7: "TIME",
                 8: "TIMESTAMP", 10: "INTEGER", 11: "UNKNOWN", 12: "JSON", 13: "BSON", 14: "UUID",
                 15: "FLOAT16", 16: "VARIANT", 17: "GEOMETRY", 18: "GEOGRAPHY"}


def enum_name(table: dict[int, str], value) -> str:
    """The enum's name, or ``UNKNOWN(n)`` for a value this reader does not know."""
    if value is None:
        return ""
    if not isinstance(value, int):
        return "INVALID"
    return table.get(value, f"UNKNOWN({value})")


SCHEMA = {
    "FileMetaData": {
        1: ("version", "i32"), 2: ("schema", "list:SchemaElement"), 3: ("num_rows", "i64"),
        4: ("row_groups", "list:RowGroup"), 5: ("key_value_metadata", "list:KeyValue"),
        6: ("created_by", "string"), 7: ("column_orders", "list:ColumnOrder"),
        8: ("encryption_algorithm", "EncryptionAlgorithm"),
        9: ("footer_signing_key_metadata", "binary"),
    },
    "KeyValue": {1: ("key", "string"), 2: ("value", "string")},
    "SchemaElement": {
        1: ("type", "i32"), 2: ("type_length", "i32"), 3: ("repetition_type", "i32"),
        4: ("name", "string"), 5: ("num_children", "i32"), 6: ("converted_type", "i32"),
        7: ("scale", "i32"), 8: ("precision", "i32"), 9: ("field_id", "i32"),
        10: ("logicalType", "LogicalType"),
    },
    "LogicalType": {i: (name, "LogicalTypeParams") for i, name in LOGICAL_TYPES.items()},
    "LogicalTypeParams": {
        # DECIMAL(scale, precision), TIME/TIMESTAMP(isAdjustedToUTC, unit), INTEGER(bitWidth, isSigned)
        1: ("param1", ""), 2: ("param2", ""),
    },
    "RowGroup": {
        1: ("columns", "list:ColumnChunk"), 2: ("total_byte_size", "i64"), 3: ("num_rows", "i64"),
        4: ("sorting_columns", "list:SortingColumn"), 5: ("file_offset", "i64"),
        6: ("total_compressed_size", "i64"), 7: ("ordinal", "i16"),
    },
    "SortingColumn": {1: ("column_idx", "i32"), 2: ("descending", "bool"),
                      3: ("nulls_first", "bool")},
    "ColumnChunk": {
        1: ("file_path", "string"), 2: ("file_offset", "i64"), 3: ("meta_data", "ColumnMetaData"),
        4: ("offset_index_offset", "i64"), 5: ("offset_index_length", "i32"),
        6: ("column_index_offset", "i64"), 7: ("column_index_length", "i32"),
        8: ("crypto_metadata", ""), 9: ("encrypted_column_metadata", "binary"),
    },
    "ColumnMetaData": {
        1: ("type", "i32"), 2: ("encodings", "list:i32"), 3: ("path_in_schema", "list:string"),
        4: ("codec", "i32"), 5: ("num_values", "i64"), 6: ("total_uncompressed_size", "i64"),
        7: ("total_compressed_size", "i64"), 8: ("key_value_metadata", "list:KeyValue"),
        9: ("data_page_offset", "i64"), 10: ("index_page_offset", "i64"),
        11: ("dictionary_page_offset", "i64"), 12: ("statistics", "Statistics"),
        13: ("encoding_stats", "list:PageEncodingStats"), 14: ("bloom_filter_offset", "i64"),
        15: ("bloom_filter_length", "i32"), 16: ("size_statistics", "SizeStatistics"),
        17: ("geospatial_statistics", ""),
    },
    "Statistics": {
        1: ("max", "binary"), 2: ("min", "binary"), 3: ("null_count", "i64"),
        4: ("distinct_count", "i64"), 5: ("max_value", "binary"), 6: ("min_value", "binary"),
        7: ("is_max_value_exact", "bool"), 8: ("is_min_value_exact", "bool"),
    },
    "SizeStatistics": {
        1: ("unencoded_byte_array_data_bytes", "i64"),
        2: ("repetition_level_histogram", "list:i64"),
        3: ("definition_level_histogram", "list:i64"),
    },
    "PageEncodingStats": {1: ("page_type", "i32"), 2: ("encoding", "i32"), 3: ("count", "i32")},
    "ColumnOrder": {1: ("TYPE_ORDER", ""), 2: ("IEEE_754_TOTAL_ORDER", ""),
                    3: ("INT96_TIMESTAMP_ORDER", "")},
    "EncryptionAlgorithm": {1: ("AES_GCM_V1", ""), 2: ("AES_GCM_CTR_V1", "")},
    "PageHeader": {
        1: ("type", "i32"), 2: ("uncompressed_page_size", "i32"),
        3: ("compressed_page_size", "i32"), 4: ("crc", "i32"),
        5: ("data_page_header", "DataPageHeader"), 6: ("index_page_header", ""),
        7: ("dictionary_page_header", "DictionaryPageHeader"),
        8: ("data_page_header_v2", "DataPageHeaderV2"),
    },
    "DataPageHeader": {
        1: ("num_values", "i32"), 2: ("encoding", "i32"), 3: ("definition_level_encoding", "i32"),
        4: ("repetition_level_encoding", "i32"), 5: ("statistics", "Statistics"),
    },
    "DictionaryPageHeader": {1: ("num_values", "i32"), 2: ("encoding", "i32"),
                             3: ("is_sorted", "bool")},
    "DataPageHeaderV2": {
        1: ("num_values", "i32"), 2: ("num_nulls", "i32"), 3: ("num_rows", "i32"),
        4: ("encoding", "i32"), 5: ("definition_levels_byte_length", "i32"),
        6: ("repetition_levels_byte_length", "i32"), 7: ("is_compressed", "bool"),
        8: ("statistics", "Statistics"),
    },
    "OffsetIndex": {1: ("page_locations", "list:PageLocation"),
                    2: ("unencoded_byte_array_data_bytes", "list:i64")},
    "PageLocation": {1: ("offset", "i64"), 2: ("compressed_page_size", "i32"),
                     3: ("first_row_index", "i64")},
    "ColumnIndex": {
        1: ("null_pages", "list:bool"), 2: ("min_values", "list:binary"),
        3: ("max_values", "list:binary"), 4: ("boundary_order", "i32"),
        5: ("null_counts", "list:i64"), 6: ("repetition_level_histograms", "list:i64"),
        7: ("definition_level_histograms", "list:i64"),
    },
    "BloomFilterHeader": {1: ("numBytes", "i32"), 2: ("algorithm", ""), 3: ("hash", ""),
                          4: ("compression", "")},
}
