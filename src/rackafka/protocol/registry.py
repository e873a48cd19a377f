"""Every API rackafka speaks, by key."""

from rackafka.protocol.apis.alter_configs import ALTER_CONFIGS
from rackafka.protocol.apis.api_versions import API_VERSIONS
from rackafka.protocol.apis.consumer_group_heartbeat import CONSUMER_GROUP_HEARTBEAT
from rackafka.protocol.apis.create_partitions import CREATE_PARTITIONS
from rackafka.protocol.apis.create_topics import CREATE_TOPICS
from rackafka.protocol.apis.delete_records import DELETE_RECORDS
from rackafka.protocol.apis.delete_topics import DELETE_TOPICS
from rackafka.protocol.apis.describe_configs import DESCRIBE_CONFIGS
from rackafka.protocol.apis.describe_groups import DESCRIBE_GROUPS
from rackafka.protocol.apis.describe_log_dirs import DESCRIBE_LOG_DIRS
from rackafka.protocol.apis.elect_leaders import ELECT_LEADERS
from rackafka.protocol.apis.fetch import FETCH
from rackafka.protocol.apis.find_coordinator import FIND_COORDINATOR
from rackafka.protocol.apis.heartbeat import HEARTBEAT
from rackafka.protocol.apis.incremental_alter_configs import INCREMENTAL_ALTER_CONFIGS
from rackafka.protocol.apis.init_producer_id import INIT_PRODUCER_ID
from rackafka.protocol.apis.join_group import JOIN_GROUP
from rackafka.protocol.apis.leave_group import LEAVE_GROUP
from rackafka.protocol.apis.list_groups import LIST_GROUPS
from rackafka.protocol.apis.list_offsets import LIST_OFFSETS
from rackafka.protocol.apis.metadata import METADATA
from rackafka.protocol.apis.offset_commit import OFFSET_COMMIT
from rackafka.protocol.apis.offset_fetch import OFFSET_FETCH
from rackafka.protocol.apis.offset_for_leader_epoch import OFFSET_FOR_LEADER_EPOCH
from rackafka.protocol.apis.partition_reassignments import (
    ALTER_PARTITION_REASSIGNMENTS,
    LIST_PARTITION_REASSIGNMENTS,
)
from rackafka.protocol.apis.produce import PRODUCE
from rackafka.protocol.apis.sasl import SASL_AUTHENTICATE, SASL_HANDSHAKE
from rackafka.protocol.apis.sync_group import SYNC_GROUP
from rackafka.protocol.apis.transactions import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    TXN_OFFSET_COMMIT,
)
from rackafka.protocol.schema import Api

ALL_APIS: tuple[Api, ...] = (
    PRODUCE,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    FIND_COORDINATOR,
    JOIN_GROUP,
    HEARTBEAT,
    LEAVE_GROUP,
    SYNC_GROUP,
    SASL_HANDSHAKE,
    API_VERSIONS,
    CREATE_TOPICS,
    OFFSET_FOR_LEADER_EPOCH,
    INIT_PRODUCER_ID,
    ADD_PARTITIONS_TO_TXN,
    ADD_OFFSETS_TO_TXN,
    END_TXN,
    TXN_OFFSET_COMMIT,
    DESCRIBE_CONFIGS,
    SASL_AUTHENTICATE,
    CONSUMER_GROUP_HEARTBEAT,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    DELETE_TOPICS,
    DELETE_RECORDS,
    ALTER_CONFIGS,
    CREATE_PARTITIONS,
    DESCRIBE_LOG_DIRS,
    ELECT_LEADERS,
    INCREMENTAL_ALTER_CONFIGS,
    ALTER_PARTITION_REASSIGNMENTS,
    LIST_PARTITION_REASSIGNMENTS,
)
API_BY_KEY: dict[int, Api] = {api.key: api for api in ALL_APIS}

__all__ = [
    "ADD_OFFSETS_TO_TXN",
    "ADD_PARTITIONS_TO_TXN",
    "ALL_APIS",
    "API_BY_KEY",
    "LIST_GROUPS",
    "DESCRIBE_GROUPS",
    "DELETE_TOPICS",
    "DELETE_RECORDS",
    "CREATE_PARTITIONS",
    "ALTER_CONFIGS",
    "API_VERSIONS",
    "CONSUMER_GROUP_HEARTBEAT",
    "CREATE_TOPICS",
    "DESCRIBE_CONFIGS",
    "END_TXN",
    "FETCH",
    "FIND_COORDINATOR",
    "HEARTBEAT",
    "INIT_PRODUCER_ID",
    "JOIN_GROUP",
    "LEAVE_GROUP",
    "LIST_OFFSETS",
    "METADATA",
    "OFFSET_COMMIT",
    "OFFSET_FETCH",
    "OFFSET_FOR_LEADER_EPOCH",
    "PRODUCE",
    "SASL_AUTHENTICATE",
    "SASL_HANDSHAKE",
    "SYNC_GROUP",
    "TXN_OFFSET_COMMIT",
    "DESCRIBE_LOG_DIRS",
    "ELECT_LEADERS",
    "INCREMENTAL_ALTER_CONFIGS",
    "ALTER_PARTITION_REASSIGNMENTS",
    "LIST_PARTITION_REASSIGNMENTS",
]
