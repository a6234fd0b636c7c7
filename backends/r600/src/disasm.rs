//! Assembly listing in the style of Mesa's r600 disassembler (being written).
