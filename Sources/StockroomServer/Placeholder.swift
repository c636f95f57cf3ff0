enum PlaceholderStockroomServer {}
