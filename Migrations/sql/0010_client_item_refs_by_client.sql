-- A device's item references by device: every navigation write that changes which items a device
-- names (an edit opened or closed, a detail pushed or popped) deletes that device's rows, and
-- deleting a device cascades to them. The primary key leads with item_id (a delete's repair looks
-- up the devices naming an item), so without this index each of those deletes read the whole
-- table: its cost grew with the number of devices. PostgreSQL's schema has had the same index
-- (`client_item_refs_client`) from its first migration.
CREATE INDEX client_item_refs_client ON client_item_refs (client_id);
